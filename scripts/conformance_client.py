"""conformance_client.py - the `client` mode of scripts/conformance.py.

Runs the official suite's client scenarios against our conformance client
(`examples/conformance_client.rs`, built on mcp-launch's own client library) the way the suite
runs every client: `CMD URL` with the scenario in MCP_CONFORMANCE_SCENARIO, the revision in
MCP_CONFORMANCE_PROTOCOL_VERSION and the scenario's input in MCP_CONFORMANCE_CONTEXT.

  conformance.py client [--requirements REV]... [--json OUT] [--keep DIR] [--client CMD]

Installs the suite with scripts/install-test-deps.sh when it is missing, builds the example
(`cargo build --example conformance_client`, honouring CARGO_TARGET_DIR) unless --client names
a command, runs each requirement set and prints one table per revision, then a last line
`N passed, M failed` over the required scenarios. A scenario passes when none of its checks is
a FAILURE (WARNINGs are shown, not fatal). Exit 1 when a required scenario fails, 2 on a setup
problem. Python 3.11 standard library only.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import conformance as suite

INSTALL = suite.ROOT / "scripts" / "install-test-deps.sh"
CLIENT_TIMEOUT_MS = "30000"


def ensure_installed() -> None:
    try:
        suite.check_installed()
    except suite.SetupError:
        print("[conformance] the suite is missing: running scripts/install-test-deps.sh", file=sys.stderr)
        subprocess.run([str(INSTALL)], check=False)
        suite.check_installed()


def build_client() -> str:
    """Builds the example client; its path."""
    print("[conformance] building examples/conformance_client.rs", file=sys.stderr)
    built = subprocess.run(
        ["cargo", "build", "--quiet", "--example", "conformance_client"], cwd=suite.ROOT, check=False
    )
    if built.returncode != 0:
        raise suite.SetupError("cargo build --example conformance_client failed")
    target = Path(os.environ.get("CARGO_TARGET_DIR") or suite.ROOT / "target")
    if not target.is_absolute():
        target = suite.ROOT / target
    binary = target / "debug" / "examples" / "conformance_client"
    if not binary.exists():
        raise suite.SetupError(f"{binary} is missing after the build")
    return str(binary)


def read_client_results(out_dir: Path, plan: suite.Plan) -> dict[str, suite.Outcome]:
    """One Outcome per scenario: the suite writes `<scenario>-<timestamp>/checks.json` (an
    `auth/x` scenario nests under `auth/`)."""
    outcomes = {scenario: suite.Outcome(status="missing") for scenario in plan.categories}
    stamp = re.compile(r"^(?P<scenario>.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")
    for checks_file in sorted(out_dir.rglob("checks.json")) if out_dir.exists() else []:
        relative = checks_file.parent.relative_to(out_dir).as_posix()
        match = stamp.match(relative.removeprefix("client-"))
        if match and match.group("scenario") in outcomes:
            outcomes[match.group("scenario")] = suite.outcome_from_checks(suite.json.loads(checks_file.read_text()))
    return outcomes


def run_client_requirements(command: str, plan: suite.Plan, work: Path) -> dict[str, suite.Outcome]:
    out_dir = work / f"client-{plan.revision}"
    log = work / f"client-{plan.revision}.log"
    print(f"[conformance] client: requirements {plan.revision} with {command}", file=sys.stderr)
    shutil.rmtree(out_dir, ignore_errors=True)
    args = ("client", "--command", command, "--requirements", plan.revision, "--timeout", CLIENT_TIMEOUT_MS)
    with log.open("w") as sink:
        try:
            subprocess.run(
                suite.suite_command(*args, "-o", str(out_dir)),
                stdout=sink,
                stderr=subprocess.STDOUT,
                env=suite.suite_env(),
                timeout=suite.SUITE_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            print(f"[conformance] the suite ran over {suite.SUITE_TIMEOUT_S} s", file=sys.stderr)
    return read_client_results(out_dir, plan)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="conformance.py client", description=__doc__.splitlines()[0])
    parser.add_argument("--requirements", action="append", metavar="REV", help="spec revision (repeatable)")
    parser.add_argument("--json", metavar="OUT", help="also write every outcome as JSON to OUT")
    parser.add_argument("--keep", metavar="DIR", help="keep the suite's raw results in DIR")
    parser.add_argument("--client", metavar="CMD", help="the client command (default: build the example)")
    args = parser.parse_args(argv)
    ensure_installed()
    versions = suite.suite_versions()
    command = args.client or shlex.quote(build_client())
    plans = [suite.plan_for(revision, "client") for revision in args.requirements or suite.available_revisions()]
    with tempfile.TemporaryDirectory(prefix="mcp-conformance-client-") as tmp:
        work = Path(args.keep or tmp)
        work.mkdir(parents=True, exist_ok=True)
        runs: suite.Runs = {"client": {plan.revision: run_client_requirements(command, plan, work) for plan in plans}}
    print(f"conformance suite {versions['suite']} on Node {versions['node']}")
    suite.print_table(plans, runs)
    if args.json:
        suite.write_json(Path(args.json), versions, plans, runs, {"client": command})
    failing = suite.required_failures(plans, runs["client"])
    if failing:
        print(f"{len(failing)} required scenario(s) fail:")
        suite.print_failures(plans, runs)
    required = sum(category == "required" for plan in plans for category in plan.categories.values())
    print(f"{required - len(failing)} passed, {len(failing)} failed")
    return 1 if failing else 0
