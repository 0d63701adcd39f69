#!/usr/bin/env python3
"""bench/real_clients.py - the gateway's added latency as the official SDK clients see it (issue 23).

Our own bench clients write each request in one segment, so they never saw that every real
client waited ~40 ms per HTTP request when the gateway left Nagle on. This bench measures with
clients nobody here wrote: the official TypeScript SDK (pinned in scripts/install-test-deps.sh)
and the official Python SDK 2.x (.deps/venv-sdk).

  python3 bench/real_clients.py [--bin target/release/mcp-launch] [--calls N] [--rounds R] [--json]

For each client (ts, python), transport (stdio, http) and concurrency (1, 16), `echo` on
@modelcontextprotocol/server-everything is called N times (after a warm-up)
- directly: the client spawns the server over stdio, or talks to the server's own Streamable
  HTTP transport (`mcp-server-everything streamableHttp`);
- through the gateway: the client spawns `mcp-launch serve` (full mode) over stdio, whose
  upstream is the server over stdio; or talks to `mcp-launch serve --http`, whose upstream is
  that same HTTP server.
Direct and through alternate, R rounds each; the figure is the added p50 (through minus direct,
per round, then the median of the rounds). Goal (issue 23): added p50 <= 0.5 ms everywhere.

  python3 bench/real_clients.py --observe [--concurrency 1] ...

With `--observe` (issue 28) the sides are three gateways instead of direct and through: metrics
off (`MCP_LAUNCH_METRICS=off`), metrics on (the default, plus `--metrics` on a loopback port),
and traces on too (`--otlp` at a local OTLP/HTTP receiver that reads and discards each export;
every client call then makes two spans). They alternate in each round; the figure is each
side's p50 minus the off side's, per round, then the median of the rounds. Goal: on <= 0.05 ms.

  python3 bench/real_clients.py --floor [--relay target/release/examples/null_relay] ...

With `--floor` a third side sits between direct and through: a process that relays the bytes
unread, where the gateway goes — over stdio `null_relay` (examples/null_relay.rs: one blocking
thread per direction, read then write; `cargo build --release --example null_relay`), over HTTP
HAProxy in TCP mode (Debian's, installed by the test-deps script). What it adds over direct is
what one more process costs on this machine before any work is done; the gateway's added p50
is set beside it, and each one's CPU time per call, from /proc.

  python3 bench/real_clients.py --versus OTHER_BIN [--transports http] ...

With `--versus` the middle side is the gateway of another build (say main's, before a change):
two builds in the same rounds, so a change is measured against what the machine does at the
same minutes, not against a run taken earlier.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import DEPS, ROOT, everything_bin, free_ports, log, pct, sandbox_env  # noqa: E402
from traces import Sink  # noqa: E402

CLIENTS_DIR = os.path.join(ROOT, "bench", "clients")
PY_SDK = os.path.join(DEPS, "venv-sdk", "bin", "python")
TS_SDK = os.environ.get("MCP_BENCH_TS_SDK", os.path.join(DEPS, "sdk-ts"))
# Node 22 of the test deps (the conformance suite's), else the machine's.
_NODE22 = os.path.join(DEPS, "conformance", "node_modules", ".bin", "node")
NODE = os.environ.get("MCP_BENCH_NODE", _NODE22 if os.path.exists(_NODE22) else "node")
ECHO_ARGS = '{"message": "hi"}'


def client_argv(client: str, target: list[str], calls: int, concurrency: int, tool: str) -> list[str]:
    common = ["--calls", str(calls), "--concurrency", str(concurrency), "--tool", tool, "--args", ECHO_ARGS]
    if client == "ts":
        head = [NODE, os.path.join(CLIENTS_DIR, "ts_latency.mjs"), "--sdk", TS_SDK]
    else:
        head = [PY_SDK, os.path.join(CLIENTS_DIR, "py_latency.py")]
    # --stdio takes the rest of the command line, so it goes last.
    return head + common + target


def run_client(argv: list[str], env: dict) -> dict:
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:2])} failed: {done.stderr.strip()[-800:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    s = sorted(out["samples_ms"])
    return {"p50": pct(s, 50), "p90": pct(s, 90), "p99": pct(s, 99), "ping": out["ping_ms"],
            "calls_per_s": len(s) / out["wall_s"], "calls": len(s), "version": out["protocolVersion"]}


def wait_port(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1)
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


class Http:
    """server-everything's own Streamable HTTP transport and a gateway in front of it."""

    def __init__(self, bin_path: str, tmp: str, env: dict, sides: dict | None = None) -> None:
        """`sides`: name → (extra `serve` flags, extra environment[, another binary]) of one
        gateway each (the default: one plain gateway of `bin_path`, "through")."""
        sides = sides or {"through": ([], {})}
        base = free_ports(1 + len(sides))
        self.server_port = base
        self.gateway_ports = {side: base + 1 + i for i, side in enumerate(sides)}
        self.gateway_port = next(iter(self.gateway_ports.values()))
        self.procs: list[subprocess.Popen] = []
        self.procs.append(subprocess.Popen(
            [everything_bin(), "streamableHttp"], env=dict(env, PORT=str(self.server_port)),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        wait_port(self.server_port, time.monotonic() + 30)
        config = os.path.join(tmp, "http.json")
        with open(config, "w") as f:
            json.dump({"mcpServers": {"everything": {
                "type": "http", "url": f"http://127.0.0.1:{self.server_port}/mcp"}}}, f)
        for side, (flags, extra_env, *other) in sides.items():
            port = self.gateway_ports[side]
            binary = other[0] if other else bin_path
            self.procs.append(subprocess.Popen(
                [binary, "serve", "--config", config, "--mode", "full",
                 "--http", f"127.0.0.1:{port}"] + no_auth(binary) + flags,
                env=dict(env, **extra_env), cwd=tmp, stdout=subprocess.DEVNULL,
                stderr=open(os.path.join(tmp, f"gateway-http-{side}.log"), "w"), start_new_session=True))
            wait_port(port, time.monotonic() + 30)

    def direct(self) -> list[str]:
        return ["--http", f"http://127.0.0.1:{self.server_port}/mcp"]

    def through(self, side: str = "through") -> list[str]:
        port = self.gateway_ports.get(side, self.gateway_port)
        return ["--http", f"http://127.0.0.1:{port}/mcp"]

    def close(self) -> None:
        for p in self.procs:
            try:
                os.killpg(p.pid, 15)
            except ProcessLookupError:
                pass
            p.wait(timeout=10)


def no_auth(bin_path: str) -> list[str]:
    """`--no-auth` where this build has it (loopback binds need a key once they do)."""
    helptext = subprocess.run([bin_path, "serve", "--help"], capture_output=True, text=True).stdout
    return ["--no-auth"] if "--no-auth" in helptext else []


def stdio_targets(bin_path: str, tmp: str) -> tuple[list[str], list[str]]:
    config = os.path.join(tmp, "stdio.json")
    with open(config, "w") as f:
        json.dump({"mcpServers": {"everything": {"command": everything_bin(), "args": []}}}, f)
    return (["--stdio", everything_bin()],
            ["--stdio", bin_path, "serve", "--config", config, "--mode", "full"])


def observe_sides(collector: str, metrics_port: int) -> dict:
    """The three gateways of `--observe`: metrics off, metrics on (`--metrics` on a port of
    its own, `metrics_port`), traces on too (`--otlp` at `collector`, `metrics_port + 1`)."""
    return {"off": ([], {"MCP_LAUNCH_METRICS": "off"}),
            "metrics": (["--metrics", f"127.0.0.1:{metrics_port}"], {}),
            "traces": (["--metrics", f"127.0.0.1:{metrics_port + 1}", "--otlp", collector], {})}


def stdio_side(target: list[str], side: tuple[list[str], dict]) -> list[str]:
    """A stdio gateway command with a side's flags; its environment goes through `env` (the
    SDKs' stdio transports pass only a few variables to the process they spawn)."""
    flags, extra_env = side
    env_words = ["env"] + [f"{k}={v}" for k, v in extra_env.items()] if extra_env else []
    return target[:1] + env_words + target[1:] + flags  # "--stdio", then the command


def rounds(client: str, conc: int, sides: dict, env: dict, calls: int, n: int) -> dict:
    """`n` rounds of one run per side, the sides alternating within each round (what the
    machine does meanwhile falls on all of them alike). `sides`: name → (the client's target,
    whose CPU to read (see `timed`) or None, the tool to call)."""
    runs: dict = {side: [] for side in sides}
    for _ in range(n):
        for side, (target, watch, tool) in sides.items():
            argv = client_argv(client, target, calls, conc, tool)
            runs[side].append(timed(watch, lambda: run_client(argv, env)))
    return runs


def added(runs: dict, side: str, base: str) -> float:
    """`side`'s p50 minus `base`'s, per round, then the median of the rounds."""
    return statistics.median(s["p50"] - b["p50"] for b, s in zip(runs[base], runs[side]))


def keys(transports: list[str], concs: list[int]):
    """(client, transport, concurrency, result key) of every measured row."""
    for client in ("ts", "python"):
        for transport in transports:
            for conc in concs:
                yield client, transport, conc, f"{client}/{transport}/c{conc}"


def summary(key: str, runs: dict, base: str, sides: list[str]) -> tuple[dict, str]:
    """Each of `sides` added over `base`, and the log line saying so."""
    over = {side: added(runs, side, base) for side in sides}
    line = (f"{key}: {base} p50 {statistics.median(x['p50'] for x in runs[base]):.3f} ms, "
            + ", ".join(f"{side} {v:+.3f} ms" for side, v in over.items()))
    return over, line


def beside(targets: dict, middle: str, env: dict, calls: int, n: int, concs: list[int],
           transports: list[str]) -> dict:
    """Direct, a `middle` side and through the gateway, per row (`targets`: transport → the
    three sides, see `rounds`): each one's added p50, and the gateway's over the middle's."""
    results: dict = {}
    for client, transport, conc, key in keys(transports, concs):
        runs = rounds(client, conc, targets[transport], env, calls, n)
        over, line = summary(key, runs, "direct", [middle, "through"])
        over[f"through_over_{middle}"] = added(runs, "through", middle)
        results[key] = {**runs, "added_p50": over}
        log(line + f", through − {middle} {over[f'through_over_{middle}']:+.3f} ms")
    return results


def measure_observe(bin_path: str, tmp: str, env: dict, calls: int, n: int, concs: list[int]) -> dict:
    """Metrics off vs on vs traces on, every side through a gateway (see the module doc)."""
    results: dict = {}
    sink = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    collector = f"http://127.0.0.1:{sink.server_address[1]}"
    metrics_port = free_ports(4)
    sides = observe_sides(collector, metrics_port)
    stdio_sides = observe_sides(collector, metrics_port + 2)
    http = Http(bin_path, tmp, env, sides)
    try:
        _, stdio_through = stdio_targets(bin_path, tmp)
        for client, transport, conc, key in keys(["stdio", "http"], concs):
            targets = {side: ((http.through(side) if transport == "http"
                               else stdio_side(stdio_through, stdio_sides[side])), None, "everything__echo")
                       for side in sides}
            runs = rounds(client, conc, targets, env, calls, n)
            over, line = summary(key, runs, "off", ["metrics", "traces"])
            results[key] = {**runs, "added_p50": over}
            log(line)
    finally:
        http.close()
        sink.shutdown()
    return {"results": results, "exports": Sink.exports, "exported_bytes": Sink.spans_bytes}


def measure(bin_path: str, tmp: str, env: dict, calls: int, n: int) -> dict:
    results: dict = {}
    http = Http(bin_path, tmp, env)
    try:
        stdio_direct, stdio_through = stdio_targets(bin_path, tmp)
        targets = {"stdio": (stdio_direct, stdio_through), "http": (http.direct(), http.through())}
        for client, transport, conc, key in keys(["stdio", "http"], [1, 16]):
            direct, through = targets[transport]
            sides = {"direct": (direct, None, "echo"), "through": (through, None, "everything__echo")}
            runs = rounds(client, conc, sides, env, calls, n)
            over, line = summary(key, runs, "direct", ["through"])
            results[key] = {**runs, "added_p50": over["through"]}
            log(line)
    finally:
        http.close()
    return results


def measure_versus(bin_path: str, other: str, tmp: str, env: dict, calls: int, n: int,
                   concs: list[int], transports: list[str]) -> dict:
    """Direct, through the gateway of `bin_path` and through that of `other` (another build):
    two builds compared in the same rounds, not minutes apart."""
    http = Http(bin_path, tmp, env, {"through": ([], {}), "versus": ([], {}, other)})
    try:
        stdio_direct, stdio_through = stdio_targets(bin_path, tmp)
        _, stdio_versus = stdio_targets(other, tmp)
        targets = {
            "stdio": {"direct": (stdio_direct, None, "echo"),
                      "through": (stdio_through, stdio_through[1:], "everything__echo"),
                      "versus": (stdio_versus, stdio_versus[1:], "everything__echo")},
            "http": {"direct": (http.direct(), None, "echo"),
                     "through": (http.through(), http.procs[1].pid, "everything__echo"),
                     "versus": (http.through("versus"), http.procs[2].pid, "everything__echo")},
        }
        return beside(targets, "versus", env, calls, n, concs, transports)
    finally:
        http.close()


HAPROXY_TCP = """global
    maxconn 1024
defaults
    mode tcp
    timeout connect 5s
    timeout client 120s
    timeout server 120s
frontend relay
    bind 127.0.0.1:{listen}
    default_backend server
backend server
    server everything 127.0.0.1:{server}
"""


def haproxy_relay(tmp: str, listen: int, server: int) -> subprocess.Popen:
    """HAProxy relaying TCP from `listen` to `server` unread (no HTTP parsing)."""
    config = os.path.join(tmp, "haproxy.cfg")
    with open(config, "w") as f:
        f.write(HAPROXY_TCP.format(listen=listen, server=server))
    binary = shutil.which("haproxy") or "/usr/sbin/haproxy"
    proc = subprocess.Popen([binary, "-db", "-f", config], stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(tmp, "haproxy.log"), "w"), start_new_session=True)
    wait_port(listen, time.monotonic() + 30)
    return proc


def cpu_seconds(pid: int) -> float:
    """The CPU time process `pid`'s living threads ran so far, in seconds (the scheduler's own
    nanoseconds, /proc/PID/task/*/schedstat: /proc/PID/stat counts in 10 ms ticks)."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            pass  # a thread that just ended
    return total / 1e9


class Spawned(threading.Thread):
    """The CPU time of the process a client spawns (found by its command line's first words,
    `argv`): read every 5 ms from /proc while it lives, the last reading kept (what it spends
    in its last 5 ms, shutting down, is missed)."""

    def __init__(self, argv: list[str]) -> None:
        super().__init__(daemon=True)
        self.argv, self.cpu, self.done = [a.encode() for a in argv], 0.0, threading.Event()
        self.start()

    def run(self) -> None:
        # One of an earlier run may still be ending: only a process new since now counts.
        earlier = set(self.matching())
        pid = None
        while not self.done.is_set() and pid is None:
            pid = next((p for p in self.matching() if p not in earlier), None)
            time.sleep(0.002)
        while pid is not None and not self.done.is_set():
            try:
                self.cpu = cpu_seconds(pid)
            except (OSError, IndexError, ValueError):
                return
            time.sleep(0.005)

    def matching(self) -> list[int]:
        return [int(p) for p in os.listdir("/proc") if p.isdigit() and self.matches(p)]

    def matches(self, pid: str) -> bool:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                words = f.read().split(b"\0")
        except OSError:
            return False
        return words[:len(self.argv)] == self.argv

    def stop(self) -> float:
        self.done.set()
        self.join(timeout=5)
        return self.cpu


def timed(watch: int | list[str] | None, run) -> dict:
    """`run()`'s figures, with the CPU time spent per timed call during it (ms; the client's
    session set-up and warm-up calls are in it too) by the process `watch` names: a pid
    (running before and after), or the command line of the one the client spawns."""
    if watch is None:
        return run()
    if isinstance(watch, int):
        before = cpu_seconds(watch)
        out = run()
        spent = cpu_seconds(watch) - before
    else:
        spawned = Spawned(watch)
        out = run()
        spent = spawned.stop()
    out["cpu_ms_per_call"] = spent * 1000 / out["calls"]
    return out


def measure_floor(bin_path: str, relay_bin: str, tmp: str, env: dict, calls: int, n: int,
                  concs: list[int], transports: list[str]) -> dict:
    """Direct, through an unread relay, and through the gateway (see the module doc)."""
    http = Http(bin_path, tmp, env)
    relay_port = free_ports(1)
    haproxy = haproxy_relay(tmp, relay_port, http.server_port)
    gateway_pid = http.procs[1].pid
    try:
        stdio_direct, stdio_through = stdio_targets(bin_path, tmp)
        targets = {
            "stdio": {"direct": (stdio_direct, None, "echo"),
                      "relay": (["--stdio", relay_bin] + stdio_direct[1:], [relay_bin], "echo"),
                      "through": (stdio_through, stdio_through[1:], "everything__echo")},
            "http": {"direct": (http.direct(), None, "echo"),
                     "relay": (["--http", f"http://127.0.0.1:{relay_port}/mcp"], haproxy.pid, "echo"),
                     "through": (http.through(), gateway_pid, "everything__echo")},
        }
        return beside(targets, "relay", env, calls, n, concs, transports)
    finally:
        os.killpg(haproxy.pid, 15)
        haproxy.wait(timeout=10)
        http.close()


def report(r: dict) -> str:
    if r.get("observe"):
        return report_observe(r)
    if r.get("floor"):
        return report_floor(r)
    if r.get("versus"):
        return report_versus(r)
    lines = [f"# real clients, {r['machine']}, {r['date']}, {r['commit']}",
             f"{r['calls']} calls per run, {r['rounds']} rounds; ms; added = through - direct (p50, median of rounds)",
             "", "| client | transport | c | direct p50 | through p50 | through p90 | ping through | added p50 | calls/s through |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key, v in r["results"].items():
        client, transport, conc = key.split("/")
        med = lambda runs, f: statistics.median(x[f] for x in runs)  # noqa: E731
        lines.append(
            f"| {client} | {transport} | {conc[1:]} | {med(v['direct'], 'p50'):.2f} | {med(v['through'], 'p50'):.2f} | "
            f"{med(v['through'], 'p90'):.2f} | {med(v['through'], 'ping'):.2f} | {v['added_p50']:+.2f} | "
            f"{med(v['through'], 'calls_per_s'):.0f} |")
    versions = sorted({f"{k.split('/')[0]}: {x['version']}" for k, v in r["results"].items() for x in v["through"]})
    lines += ["", "negotiated through the gateway: " + ", ".join(versions)]
    return "\n".join(lines)


def report_floor(r: dict) -> str:
    title = "direct vs an unread relay vs the gateway"
    return report_sides(r, title, "relay", "relay", "gateway")


def report_versus(r: dict) -> str:
    title = f"direct vs the gateway of {r['versus']} (versus) vs this one's (through)"
    return report_sides(r, title, "versus", "versus", "through")


def report_sides(r: dict, title: str, middle: str, middle_name: str, through_name: str) -> str:
    """Direct, a `middle` side and the gateway: each one's added p50 and CPU per call."""
    lines = [f"# real clients, {title}, {r['machine']}, {r['date']}, {r['commit']}, load {r.get('load', '?')}",
             f"{r['calls']} calls per run, {r['rounds']} rounds; ms; added = side - direct "
             f"(p50, median of rounds); CPU = the {middle_name}'s or the {through_name}'s CPU time per call",
             "", f"| client | transport | c | direct p50 | {middle_name} added | {through_name} added | "
             f"{through_name} − {middle_name} | {middle_name} CPU/call | {through_name} CPU/call |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for key, v in r["results"].items():
        client, transport, conc = key.split("/")
        med = lambda runs, f: statistics.median(x[f] for x in runs)  # noqa: E731
        cpu = lambda side: f"{med(v[side], 'cpu_ms_per_call'):.3f}" if "cpu_ms_per_call" in v[side][0] else "–"  # noqa: E731
        a = v["added_p50"]
        lines.append(f"| {client} | {transport} | {conc[1:]} | {med(v['direct'], 'p50'):.2f} | {a[middle]:+.2f} | "
                     f"{a['through']:+.2f} | {a[f'through_over_{middle}']:+.2f} | {cpu(middle)} | {cpu('through')} |")
    return "\n".join(lines)


def report_observe(r: dict) -> str:
    lines = [f"# real clients, metrics and traces, {r['machine']}, {r['date']}, {r['commit']}, load {r.get('load', '?')}",
             f"{r['calls']} calls per run, {r['rounds']} rounds; ms; added = side - off (p50, median of rounds)",
             "", "| client | transport | c | off p50 | metrics p50 | traces p50 | metrics added | traces added |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for key, v in r["results"].items():
        client, transport, conc = key.split("/")
        med = lambda side: statistics.median(x["p50"] for x in v[side])  # noqa: E731
        lines.append(f"| {client} | {transport} | {conc[1:]} | {med('off'):.3f} | {med('metrics'):.3f} | "
                     f"{med('traces'):.3f} | {v['added_p50']['metrics']:+.3f} | {v['added_p50']['traces']:+.3f} |")
    lines += ["", f"{r['exports']} OTLP exports received, {r['exported_bytes']:,} bytes"]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--calls", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--render", metavar="FILE", help="print the report of a saved --json result")
    ap.add_argument("--observe", action="store_true", help="metrics off vs on vs traces on (issue 28)")
    ap.add_argument("--floor", action="store_true", help="direct vs an unread relay vs the gateway")
    ap.add_argument("--relay", default=os.path.join(ROOT, "target", "release", "examples", "null_relay"),
                    help="the stdio relay of --floor (examples/null_relay.rs)")
    ap.add_argument("--versus", metavar="BIN", help="direct vs the gateway of BIN (another build) vs --bin's")
    ap.add_argument("--concurrency", default="1,16", help="comma-separated concurrencies (default 1,16)")
    ap.add_argument("--transports", default="stdio,http", help="with --floor or --versus: comma-separated (default stdio,http)")
    a = ap.parse_args()
    if a.render:
        with open(a.render) as f:
            print(report(json.load(f)))
        return
    for path in (a.bin, PY_SDK, os.path.join(TS_SDK, "node_modules", "@modelcontextprotocol", "sdk")):
        if not os.path.exists(path):
            sys.exit(f"missing {path} (cargo build --release; bash scripts/install-test-deps.sh)")
    with tempfile.TemporaryDirectory(prefix="mcpl-real-clients-") as tmp:
        env = sandbox_env(tmp)
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                                capture_output=True, text=True).stdout.strip()
        result = {"machine": f"{os.cpu_count()} cores, {platform.machine()}",
                  "date": time.strftime("%Y-%m-%d"), "commit": commit, "calls": a.calls,
                  "rounds": a.rounds}
        if a.floor:
            concs = [int(c) for c in a.concurrency.split(",")]
            result.update(floor=True, results=measure_floor(a.bin, a.relay, tmp, env, a.calls, a.rounds, concs,
                                                       a.transports.split(",")))
        elif a.versus:
            concs = [int(c) for c in a.concurrency.split(",")]
            result.update(versus=a.versus, results=measure_versus(
                a.bin, a.versus, tmp, env, a.calls, a.rounds, concs, a.transports.split(",")))
        elif a.observe:
            concs = [int(c) for c in a.concurrency.split(",")]
            result.update(observe=True, **measure_observe(a.bin, tmp, env, a.calls, a.rounds, concs))
        else:
            result["results"] = measure(a.bin, tmp, env, a.calls, a.rounds)
        result["load"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(json.dumps(result, indent=1) if a.json else report(result))


if __name__ == "__main__":
    main()
