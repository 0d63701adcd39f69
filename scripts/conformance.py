#!/usr/bin/env python3
"""conformance.py - run the official MCP conformance suite's server scenarios and tabulate them.

Python 3.11 standard library only. The suite (`@modelcontextprotocol/conformance`) and the
Node 22 it needs come from `scripts/install-test-deps.sh` (`.deps/conformance/`); the fixture
server (`tests/fixtures/conformance_server.py`) runs with `.deps/venv-sdk/bin/python`.

Modes:
  conformance.py --url http://127.0.0.1:PORT/mcp --requirements 2025-11-25 [--json OUT]
      run the scenarios a spec revision requires (plus those the suite runs unscored)
      against a running server; exit 1 when a required scenario fails.
  conformance.py --fixture-direct [--json OUT]
      start the fixture over HTTP on a free port and run every requirement set the suite
      has (2025-11-25, 2026-07-28); exit 1 when a required scenario fails.
  conformance.py [--json OUT] --through CMD...
      run the fixture directly, then start CMD - a command template, e.g.
        mcp-launch serve --http 127.0.0.1:{port} --no-auth --config {config} --passthrough
      where {port} is a free port and {config} a generated mcp-launch config whose only
      server, "conformance", is the fixture over stdio - wait for the port, run the same
      suites against http://127.0.0.1:{port}/mcp and print both side by side. Exit 1 when a
      scenario (scored or not) that passes directly does not pass through CMD.

  conformance.py client [--requirements REV]... [--json OUT] [--keep DIR] [--client CMD]
      run the suite's client scenarios against examples/conformance_client.rs (our client
      library), built first; ends with `N passed, M failed` (scripts/conformance_client.py).

--requirements REV (repeatable) picks the revisions; without it, every requirement set the
installed suite has among 2025-11-25 and 2026-07-28 is run, in every mode. A scenario
passes when none of its checks is a FAILURE; WARNING checks are shown but do not fail it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEPS = ROOT / ".deps"
SUITE_DIR = DEPS / "conformance" / "node_modules"
NODE = SUITE_DIR / ".bin" / "node"
SUITE_JS = SUITE_DIR / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
FIXTURE = ROOT / "tests" / "fixtures" / "conformance_server.py"
FIXTURE_PYTHON = DEPS / "venv-sdk" / "bin" / "python"
PREFERRED_REVISIONS = ("2025-11-25", "2026-07-28")
SUITE_TIMEOUT_S = 900
START_TIMEOUT_S = 30
RESULT_DIR = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")


class SetupError(Exception):
    """A setup problem the run cannot go on from (missing deps, a server that never listened)."""


@dataclass
class Outcome:
    """One scenario's result in one run."""

    status: str  # "pass", "fail" or "missing" (no result: the suite crashed or skipped it)
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)

    def cell(self) -> str:
        total = self.passed + self.failed
        if self.status == "missing":
            return "no result"
        if total == 0:
            return f"{self.status} (all {self.skipped} skipped)"
        label = "pass" if self.status == "pass" else "FAIL"
        return f"{label} {self.passed}/{total}" + (f" ({self.warnings}w)" if self.warnings else "")


@dataclass
class Plan:
    """What the suite runs for one revision: each server scenario and whether it is scored."""

    revision: str
    categories: dict[str, str]  # scenario -> "required" | "extension" | "pending" | ...


# --- the suite -------------------------------------------------------------------------------


def suite_command(*args: str) -> list[str]:
    return [str(NODE), str(SUITE_JS), *args]


def suite_env() -> dict[str, str]:
    """Node 22 first on PATH, in case the suite spawns `node` itself."""
    return {**os.environ, "PATH": f"{NODE.parent}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}


def run_suite_tool(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        suite_command(*args), capture_output=True, text=True, env=suite_env(), timeout=timeout, check=False
    )


def check_installed() -> None:
    for path in (NODE, SUITE_JS):
        if not path.exists():
            raise SetupError(f"{path} is missing: run scripts/install-test-deps.sh")


def suite_versions() -> dict[str, str]:
    node = subprocess.run([str(NODE), "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return {"suite": run_suite_tool("--version").stdout.strip(), "node": node}


def available_revisions() -> list[str]:
    """The requirement sets `conformance list --help` names, among those we know how to run."""
    listed = run_suite_tool("list", "--help").stdout
    found = re.search(r"Requirement sets available:\s*([\d\-,\s]+)", listed)
    known = set(re.findall(r"\d{4}-\d\d-\d\d", found.group(1))) if found else set()
    return [revision for revision in PREFERRED_REVISIONS if revision in known] or [PREFERRED_REVISIONS[0]]


def plan_for(revision: str, side: str = "server") -> Plan:
    """Parses `conformance list --SIDE --requirements REV` into scenario -> category."""
    listed = run_suite_tool("list", f"--{side}", "--requirements", revision)
    if listed.returncode != 0:
        raise SetupError(
            f"the suite has no requirement set {revision}: {listed.stderr.strip() or listed.stdout.strip()}"
        )
    categories: dict[str, str] = {}
    section = None
    for line in listed.stdout.splitlines():
        if line.startswith(f"{side.capitalize()} scenarios"):
            section = "required"
        elif line.startswith(("Server scenarios", "Client scenarios")):
            section = None
        elif match := re.match(r"^  ([\w-]+) \(\d+\):$", line):
            section = match.group(1)
        elif match := re.match(r"^\s+- (\S+)(?: \[(server|client)\])?$", line):
            listed_side = match.group(2) or (side if section == "required" else None)
            if section and listed_side == side:
                categories[match.group(1)] = section
    if not categories:
        raise SetupError(f"could not read the scenarios of {revision} from `conformance list`:\n{listed.stdout}")
    return Plan(revision, categories)


def outcome_from_checks(checks: list[dict]) -> Outcome:
    statuses = [check.get("status") for check in checks]
    outcome = Outcome(
        status="fail" if "FAILURE" in statuses else "pass",
        passed=statuses.count("SUCCESS"),
        failed=statuses.count("FAILURE"),
        warnings=statuses.count("WARNING"),
        skipped=statuses.count("SKIPPED"),
    )
    outcome.errors = [
        f"{check.get('id')}: {check.get('errorMessage', '')}".strip()
        for check in checks
        if check.get("status") == "FAILURE"
    ]
    return outcome


def read_results(out_dir: Path, plan: Plan) -> dict[str, Outcome]:
    """One Outcome per planned scenario from the suite's `-o` directory (the newest of repeats)."""
    outcomes = {scenario: Outcome(status="missing") for scenario in plan.categories}
    for result in sorted(out_dir.iterdir()) if out_dir.exists() else []:
        match = RESULT_DIR.match(result.name)
        checks_file = result / "checks.json"
        if match and checks_file.exists():
            outcomes[match.group("scenario")] = outcome_from_checks(json.loads(checks_file.read_text()))
    return outcomes


def run_requirements(url: str, plan: Plan, work: Path, label: str) -> dict[str, Outcome]:
    out_dir = work / f"{label}-{plan.revision}"
    log = work / f"{label}-{plan.revision}.log"
    print(f"[conformance] {label}: requirements {plan.revision} against {url}", file=sys.stderr)
    shutil.rmtree(out_dir, ignore_errors=True)  # a reused --keep DIR must not lend old results
    args = ("server", "--url", url, "--requirements", plan.revision, "-o", str(out_dir))
    with log.open("w") as sink:
        try:
            subprocess.run(
                suite_command(*args), stdout=sink, stderr=subprocess.STDOUT, env=suite_env(), timeout=SUITE_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            print(
                f"[conformance] the suite ran over {SUITE_TIMEOUT_S} s (--keep DIR keeps {log.name})", file=sys.stderr
            )
    return read_results(out_dir, plan)


# --- servers under test ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Process:
    """A server we start: own process group, output to a log file, stopped on exit."""

    def __init__(self, argv: list[str], log: Path, port: int, name: str):
        self.argv, self.log, self.port, self.name = argv, log, port, name
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Process:
        print(f"[conformance] starting {self.name}: {shlex.join(self.argv)}", file=sys.stderr)
        with self.log.open("wb") as sink:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            self.wait_listening()
        except BaseException:
            self.stop()  # `with` does not call __exit__ when __enter__ raises
            raise
        return self

    def wait_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SetupError(
                    f"{self.name} exited with status {self.proc.returncode} before listening:\n{self.tail()}"
                )
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SetupError(
            f"{self.name} did not listen on 127.0.0.1:{self.port} within {START_TIMEOUT_S} s:\n{self.tail()}"
        )

    def tail(self, lines: int = 20) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            print(
                f"[conformance] {self.name} had exited (status {self.proc.returncode}):\n{self.tail()}", file=sys.stderr
            )
        self.stop()

    def stop(self) -> None:
        """SIGTERM to the whole process group, SIGKILL after 5 s; the group may outlive its leader."""
        if self.proc is None:
            return
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=5)
                return
            except subprocess.TimeoutExpired:
                continue


def fixture_process(work: Path) -> Process:
    for path in (FIXTURE_PYTHON, FIXTURE):
        if not path.exists():
            raise SetupError(f"{path} is missing (the fixture needs .deps/venv-sdk: scripts/install-test-deps.sh)")
    port = free_port()
    return Process([str(FIXTURE_PYTHON), str(FIXTURE), "--http", str(port)], work / "fixture.log", port, "fixture")


def write_gateway_config(work: Path) -> Path:
    config = {"mcpServers": {"conformance": {"command": str(FIXTURE_PYTHON), "args": [str(FIXTURE)]}}}
    path = work / "conformance-config.json"
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def gateway_process(template: list[str], work: Path) -> Process:
    if len(template) == 1 and " " in template[0]:
        template = shlex.split(template[0])
    if not any("{port}" in arg for arg in template):
        raise SetupError("the --through command must contain {port} (where the gateway listens)")
    port, config = free_port(), write_gateway_config(work)
    argv = [arg.replace("{port}", str(port)).replace("{config}", str(config)) for arg in template]
    return Process(argv, work / "gateway.log", port, "gateway")


def url_of(process: Process) -> str:
    return f"http://127.0.0.1:{process.port}/mcp"


# --- reporting -------------------------------------------------------------------------------

Runs = dict[str, dict[str, dict[str, Outcome]]]  # label -> revision -> scenario -> Outcome


def print_table(plans: list[Plan], runs: Runs) -> None:
    labels = list(runs)
    for plan in plans:
        rows = [
            (scenario, category, *[runs[label][plan.revision][scenario].cell() for label in labels])
            for scenario, category in plan.categories.items()
        ]
        header = ("scenario", "category", *labels)
        widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
        print(f"\n== requirements {plan.revision} ==")
        for row in [header, tuple("-" * w for w in widths), *rows]:
            print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        for label in labels:
            outcomes = runs[label][plan.revision]
            scored = [s for s, c in plan.categories.items() if c == "required"]
            passing = sum(outcomes[s].status == "pass" for s in scored)
            print(f"{label}: {passing}/{len(scored)} required scenarios pass")


def print_failures(plans: list[Plan], runs: Runs) -> None:
    for label, by_revision in runs.items():
        for plan in plans:
            for scenario, outcome in by_revision[plan.revision].items():
                if outcome.status != "pass" and plan.categories.get(scenario) == "required":
                    detail = "; ".join(outcome.errors)[:400] or "no result file"
                    print(f"  {label} {plan.revision} {scenario}: {detail}")


def required_failures(plans: list[Plan], outcomes: dict[str, dict[str, Outcome]]) -> list[str]:
    return [
        f"{plan.revision} {scenario}"
        for plan in plans
        for scenario, category in plan.categories.items()
        if category == "required" and outcomes[plan.revision][scenario].status != "pass"
    ]


def regressions(plans: list[Plan], runs: Runs) -> list[tuple[str, str]]:
    """(revision, scenario) of each scenario that passes directly but not through the gateway."""
    return [
        (plan.revision, scenario)
        for plan in plans
        for scenario in plan.categories
        if runs["direct"][plan.revision][scenario].status == "pass"
        and runs["through"][plan.revision][scenario].status != "pass"
    ]


def write_json(path: Path, versions: dict[str, str], plans: list[Plan], runs: Runs, extra: dict) -> None:
    report = {
        **versions,
        **extra,
        "revisions": {plan.revision: plan.categories for plan in plans},
        "runs": {
            label: {rev: {s: asdict(o) for s, o in outcomes.items()} for rev, outcomes in by_rev.items()}
            for label, by_rev in runs.items()
        },
    }
    path.write_text(json.dumps(report, indent=2) + "\n")


# --- modes -----------------------------------------------------------------------------------


def run_all(url: str, plans: list[Plan], work: Path, label: str) -> dict[str, dict[str, Outcome]]:
    return {plan.revision: run_requirements(url, plan, work, label) for plan in plans}


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    check_installed()
    versions = suite_versions()
    revisions = args.requirements or available_revisions()
    plans = [plan_for(revision) for revision in revisions]
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-") as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        runs: Runs = {}
        if args.url:
            runs["server"] = run_all(args.url, plans, work, "server")
        else:
            with fixture_process(work) as fixture:
                runs["direct"] = run_all(url_of(fixture), plans, work, "direct")
            if args.through:
                with gateway_process(args.through, work) as gateway:
                    runs["through"] = run_all(url_of(gateway), plans, work, "through")
        print(f"conformance suite {versions['suite']} on Node {versions['node']}")
        print_table(plans, runs)
        extra = {"through": shlex.join(args.through)} if args.through else {}
        if args.json:
            write_json(Path(args.json), versions, plans, runs, extra)
        return verdict(plans, runs)


def verdict(plans: list[Plan], runs: Runs) -> int:
    if "through" in runs:
        lost = regressions(plans, runs)
        for revision, scenario in lost:
            outcome = runs["through"][revision][scenario]
            detail = "; ".join(outcome.errors)[:300] or outcome.cell()
            print(f"REGRESSION (passes directly, not through the gateway): {revision} {scenario}: {detail}")
        return 1 if lost else 0
    failing = required_failures(plans, next(iter(runs.values())))
    if failing:
        print(f"{len(failing)} required scenario(s) fail:")
        print_failures(plans, runs)
    return 1 if failing else 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], epilog="See the module docstring for the modes."
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--url", help="run against a running server at this URL")
    mode.add_argument("--fixture-direct", action="store_true", help="start the fixture over HTTP and run it")
    mode.add_argument(
        "--through",
        nargs=argparse.REMAINDER,
        metavar="CMD",
        help="gateway command template with {port} and {config}; must come last",
    )
    parser.add_argument("--requirements", action="append", metavar="REV", help="spec revision (repeatable)")
    parser.add_argument("--json", metavar="OUT", help="also write every outcome as JSON to OUT")
    parser.add_argument("--keep", metavar="DIR", help="keep the suite's raw results and server logs in DIR")
    args = parser.parse_args(argv)
    if args.through is not None and not args.through:
        parser.error("--through needs a command")
    return args


if __name__ == "__main__":
    try:
        if sys.argv[1:2] == ["client"]:
            sys.modules.setdefault("conformance", sys.modules[__name__])  # one SetupError
            import conformance_client

            sys.exit(conformance_client.main(sys.argv[2:]))
        sys.exit(main(sys.argv[1:]))
    except SetupError as error:
        print(f"conformance.py: {error}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)
