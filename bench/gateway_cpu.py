#!/usr/bin/env python3
"""bench/gateway_cpu.py - the gateway's CPU per tool call, in instructions (issue 23).

Wall-clock latency on a shared 2-core machine moves with whatever else runs; the instructions
the gateway executes per call do not. This bench runs `mcp-launch serve` under
`valgrind --tool=callgrind` and counts them:

  python3 bench/gateway_cpu.py [--bin target/profiling/mcp-launch] [--calls N] [--json]
                               [--only stdio|http] [--top K] [--keep] [--clock | --syscalls]

(`cargo build --profile profiling` builds the release code with line tables, so the top
functions have names; any build works.) For each transport:
- stdio: a raw JSON-RPC client spawns `mcp-launch serve --mode full` (under callgrind), whose
  upstream is @modelcontextprotocol/server-everything over stdio;
- http: `mcp-launch serve --mode full --http` (under callgrind) in front of server-everything's
  own Streamable HTTP transport, called over kept-alive connections (one per worker, 2025-11-25
  session, as the official SDK clients do).
After a warm-up the counters are zeroed (`callgrind_control -z`), N `echo` calls are made at
concurrency 1 and then at 16, each batch dumped on its own (`callgrind_control -d`); Ir/call is
the dump's total over N (an idle interval of the same wall time is measured too, to show
what the gateway does with no calls: timers, polling). Counting starts once the gateway is
quiet (the catalog rebuild its first connect sets off is not a call's cost). The top functions
by exclusive Ir are read from the dump.

With `--clock` the gateway runs as it is (no valgrind) and the figure is its CPU time per call
(user + system, every thread, in ns: the process's CPU clock, `clock_gettime` of
`MAKE_PROCESS_CPUCLOCK(pid)`), read before and after each batch: what a release build spends on
this machine, load included (run it on a quiet machine; more calls, less noise).

With `--syscalls` the gateway runs as it is and `strace -c -f` is attached to all its threads
for each batch: the figure is its system calls per call (each a trip into the kernel — socket
and pipe reads and writes, epoll, futex wake-ups of worker threads), which `--clock` counts as
system time and callgrind does not see at all; the top rows are the calls by name.

With `--observe off,metrics,traces` (issue 28) each transport is measured once per side: metrics
off (`MCP_LAUNCH_METRICS=off`), metrics on (the default, and `--metrics` on a loopback port), and
traces on too (`--otlp` at an OTLP/HTTP receiver in this process that reads and discards each
export); rows are named `transport/side`. The exporter sends its batches from a background task
every few seconds: use enough calls (`--calls 2000`) that its sends fall inside the batches.

Over HTTP every worker has its own connection but all share one session, so request ids are
unique across the workers: the first version of this bench numbered each connection from 1,
two in-flight requests of the session could hold the same id, and rmcp routes an answer by
(session, id): one call's stream then never got its answer and ended with the session (after
`--session-idle`, 120 s; it showed under valgrind, where calls overlap for longer).
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import itertools
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time
from http.server import ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, everything_bin, free_ports, log, sandbox_env  # noqa: E402
from traces import Sink  # noqa: E402

ECHO = {"name": "everything__echo", "arguments": {"message": "hi"}}
INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "gateway-cpu", "version": "1"}}


# ---------------------------------------------------------------- clients


class Stdio:
    """A raw newline-delimited JSON-RPC client over the gateway's stdio."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 1
        self.pending: dict[int, asyncio.Future] = {}
        self.reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        while line := await self.proc.stdout.readline():
            msg = json.loads(line)
            fut = self.pending.pop(msg.get("id"), None) if "method" not in msg else None
            if fut and not fut.done():
                fut.set_result(msg)

    async def request(self, method: str, params: dict) -> dict:
        rid = self.next_id
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()
        reply = await fut
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    async def open(self) -> "Stdio":
        await self.request("initialize", INIT)
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        return self

    def worker(self) -> "Stdio":
        return self  # one pipe carries every concurrent call

    async def call(self) -> None:
        await self.request("tools/call", ECHO)


class HttpConnection:
    """One kept-alive HTTP/1.1 connection to `/mcp` (Streamable HTTP: a JSON or SSE answer).
    `ids` numbers the requests of the whole session (shared by its connections: an id must be
    unique in a session, not only on a connection)."""

    def __init__(self, port: int, session: str | None, ids: itertools.count) -> None:
        self.port, self.session, self.ids = port, session, ids
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.extra_head: list[str] = []  # more header lines (`bench/traces.py`: traceparent)

    async def post(self, body: dict) -> tuple[dict, dict | None]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        data = json.dumps(body).encode()
        head = [f"POST /mcp HTTP/1.1", f"Host: 127.0.0.1:{self.port}",
                "Content-Type: application/json", "Accept: application/json, text/event-stream",
                "MCP-Protocol-Version: 2025-11-25", f"Content-Length: {len(data)}"]
        if self.session:
            head.append(f"Mcp-Session-Id: {self.session}")
        head += self.extra_head
        self.writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + data)
        await self.writer.drain()
        status = await self.reader.readline()
        headers: dict = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        if "content-length" in headers:
            payload = await self.reader.readexactly(int(headers["content-length"]))
        else:
            payload = await self._chunked()
        if not status.split()[1].startswith(b"2"):
            raise RuntimeError(f"{status!r}: {payload[:300]!r}")
        message = _message(payload, headers.get("content-type", ""))
        if message is None and "id" in body:
            raise RuntimeError(f"no answer to {body['method']} in {payload[:500]!r}")
        return headers, message

    async def _chunked(self) -> bytes:
        out = b""
        while True:
            size = int((await self.reader.readline()).strip(), 16)
            chunk = await self.reader.readexactly(size + 2)
            if size == 0:
                return out
            out += chunk[:-2]

    async def request(self, method: str, params: dict) -> dict:
        rid = next(self.ids)
        headers, reply = await self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        if reply is None or "error" in reply:
            raise RuntimeError(f"{method}: {reply} ({headers})")
        return reply["result"]


def _message(payload: bytes, content_type: str) -> dict | None:
    """The JSON-RPC answer of a JSON body or of the `data:` lines of an SSE stream."""
    if not payload.strip():
        return None
    if "text/event-stream" not in content_type:
        return json.loads(payload)
    for line in payload.decode().splitlines():
        if line.startswith("data:") and line[5:].strip():
            msg = json.loads(line[5:])
            if "result" in msg or "error" in msg:
                return msg
    return None


class Http:
    """A 2025-11-25 session over HTTP; each worker its own kept-alive connection."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.session: str | None = None
        self.ids = itertools.count(1)

    async def open(self) -> "Http":
        first = HttpConnection(self.port, None, self.ids)
        headers, _ = await first.post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": INIT})
        self.session = first.session = headers.get("mcp-session-id")
        await first.post({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    def worker(self) -> HttpConnection:
        return HttpConnection(self.port, self.session, self.ids)


async def calls(client, n: int, concurrency: int) -> None:
    """`n` echo calls, `concurrency` in flight."""
    left = [n]

    async def work(peer) -> None:
        while left[0] > 0:
            left[0] -= 1
            result = await peer.request("tools/call", ECHO)
            if result.get("isError"):
                raise RuntimeError(f"echo failed: {result}")

    await asyncio.gather(*(work(client.worker()) for _ in range(concurrency)))


# ---------------------------------------------------------------- callgrind


class Counted:
    """`argv` running under callgrind; its counters zeroed and dumped on demand."""

    def __init__(self, argv: list[str], out_dir: str, env: dict, cwd: str, pipes: bool) -> None:
        self.out = os.path.join(out_dir, "callgrind.out")
        self.argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={self.out}",
                     "--dump-instr=no", "--compress-strings=no"] + argv
        self.env, self.cwd, self.pipes = env, cwd, pipes
        self.proc: asyncio.subprocess.Process | None = None
        self.log = open(os.path.join(out_dir, "gateway.log"), "w")

    async def start(self) -> asyncio.subprocess.Process:
        pipe = asyncio.subprocess.PIPE if self.pipes else asyncio.subprocess.DEVNULL
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, cwd=self.cwd, env=self.env, stdin=pipe, stdout=pipe, stderr=self.log,
            limit=64 * 1024 * 1024, start_new_session=True)
        return self.proc

    def control(self, flag: str) -> None:
        done = subprocess.run(["callgrind_control", flag, str(self.proc.pid)],
                              capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"callgrind_control {flag}: {done.stdout}{done.stderr}")

    def zero(self) -> None:
        self.control("-z")

    def count(self, top: int = 0) -> tuple[int, list[dict]]:
        """Instructions since the last zero, and the `top` functions by exclusive Ir."""
        dump = self.dump()
        return total_ir(dump), top_functions(dump, top) if top else []

    def dump(self) -> str:
        """Dumps the counters since the last zero; the dump's file."""
        before = set(glob.glob(self.out + ".*"))
        self.control("-d")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            new = sorted(set(glob.glob(self.out + ".*")) - before, key=os.path.getmtime)
            if new and _complete(new[-1]):
                return new[-1]
            time.sleep(0.2)
        raise RuntimeError("callgrind wrote no dump")

    async def stop(self) -> None:
        if self.proc and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, 15)
            except ProcessLookupError:
                pass
            try:
                await asyncio.wait_for(self.proc.wait(), 60)
            except asyncio.TimeoutError:
                os.killpg(self.proc.pid, 9)


class Clocked(Counted):
    """`argv` running as it is; its CPU time (ns, user + system, all threads) read from the
    process's CPU clock."""

    unit = "ns"
    quiet_per_s = 20_000_000  # 2% of a core: timers and polling only

    def __init__(self, argv: list[str], out_dir: str, env: dict, cwd: str, pipes: bool) -> None:
        super().__init__(argv, out_dir, env, cwd, pipes)
        self.argv = argv
        self.zeroed = 0

    def clock(self) -> int:
        # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED): the whole process's CPU time.
        return time.clock_gettime_ns(((~self.proc.pid) << 3) | 2)

    def zero(self) -> None:
        self.zeroed = self.clock()

    def count(self, top: int = 0) -> tuple[int, list[dict]]:
        return self.clock() - self.zeroed, []


class Straced(Clocked):
    """`argv` running as it is; the system calls of all its threads counted by `strace -c -f`
    attached for each batch (each one a trip into the kernel: reads, writes, wake-ups)."""

    unit = "syscalls"
    quiet_per_s = 200  # timers only

    def __init__(self, argv: list[str], out_dir: str, env: dict, cwd: str, pipes: bool) -> None:
        super().__init__(argv, out_dir, env, cwd, pipes)
        self.tracer: subprocess.Popen | None = None
        self.summary = os.path.join(out_dir, "strace.txt")

    def zero(self) -> None:
        self._detach()
        self.tracer = subprocess.Popen(["strace", "-c", "-f", "-p", str(self.proc.pid), "-o", self.summary],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)  # attached to every thread before the batch starts

    def _detach(self) -> None:
        if self.tracer:
            self.tracer.send_signal(2)
            self.tracer.wait(60)
            self.tracer = None

    def count(self, top: int = 0) -> tuple[int, list[dict]]:
        self._detach()
        rows = []
        with open(self.summary) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 5 and parts[0][0].isdigit() and parts[-1] != "total":
                    calls = int(parts[3])
                    rows.append({"ir": calls, "function": parts[-1]})
                elif parts and parts[-1] == "total":
                    total = int(parts[3])
        rows.sort(key=lambda r: -r["ir"])
        return total, rows[:top]


Counted.unit = "Ir"
Counted.quiet_per_s = 2_000_000


def _complete(path: str) -> bool:
    try:
        with open(path) as f:
            return any(line.startswith("totals:") for line in f)
    except OSError:
        return False


def total_ir(dump: str) -> int:
    with open(dump) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError(f"no total in {dump}")


def costs(dump: str) -> tuple[dict, dict]:
    """Exclusive and inclusive Ir per function of a callgrind dump (read here: the format is
    small, and callgrind_annotate 3.19 charges everything to `clone` on these dumps). A cost
    line right after `calls=` is the call's inclusive cost; every other one is the function's
    own. Inclusive = own + calls made (a recursive function's counts twice)."""
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    fn, after_call = "?", False
    with open(dump) as f:
        for line in f:
            if line.startswith("fn="):
                fn = line[3:].strip()
            elif line.startswith("calls="):
                after_call = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                parts = line.split()
                ir = int(parts[1]) if len(parts) > 1 else 0
                inclusive[fn] = inclusive.get(fn, 0) + ir
                if not after_call:
                    own[fn] = own.get(fn, 0) + ir
                after_call = False
    return own, inclusive


def top_functions(dump: str, k: int) -> list[dict]:
    """The `k` functions with the most exclusive Ir in `dump`."""
    own, _ = costs(dump)
    ranked = sorted(own.items(), key=lambda kv: -kv[1])[:k]
    return [{"ir": ir, "function": _short(name)} for name, ir in ranked]


def _short(name: str) -> str:
    """A function's name without the crate hash and with long generic arguments cut."""
    name = re.sub(r"::h[0-9a-f]{16}$", "", name)
    return name if len(name) < 110 else name[:107] + "..."


# ---------------------------------------------------------------- runs


def observe_side(side: str | None, collector: str) -> tuple[list[str], dict]:
    """The `serve` flags and environment of one `--observe` side (none: as the binary is)."""
    if side is None:
        return [], {}
    if side == "off":
        return [], {"MCP_LAUNCH_METRICS": "off"}
    flags = ["--metrics", f"127.0.0.1:{free_ports(1)}"]
    return (flags + ["--otlp", collector] if side == "traces" else flags), {}


async def measure(transport: str, bin_path: str, n: int, warmup: int, top: int, tmp: str, env: dict,
                  counter: type = Counted, side: tuple[str, list[str], dict] | None = None) -> dict:
    name, side_flags, side_env = side or ("", [], {})
    out_dir = os.path.join(tmp, transport + (f"-{name}" if name else ""))
    os.makedirs(out_dir)
    upstream = None
    config = os.path.join(out_dir, "config.json")
    if transport == "stdio":
        servers = {"everything": {"command": everything_bin(), "args": []}}
        extra: list[str] = []
    else:
        server_port, gateway_port = free_ports(2), None
        gateway_port = server_port + 1
        upstream = await asyncio.create_subprocess_exec(
            everything_bin(), "streamableHttp", env=dict(env, PORT=str(server_port)),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
        await wait_port(server_port, 30)
        servers = {"everything": {"type": "http", "url": f"http://127.0.0.1:{server_port}/mcp"}}
        extra = ["--http", f"127.0.0.1:{gateway_port}", "--no-auth"]
    with open(config, "w") as f:
        json.dump({"mcpServers": servers}, f)
    gateway = counter([bin_path, "serve", "--config", config, "--mode", "full"] + extra + side_flags,
                      out_dir, dict(env, **side_env), out_dir, pipes=transport == "stdio")
    proc = await gateway.start()
    try:
        if transport == "stdio":
            client = await asyncio.wait_for(Stdio(proc).open(), 300)
        else:
            await wait_port(gateway_port, 120)
            client = await asyncio.wait_for(Http(gateway_port).open(), 300)
        await calls(client, warmup, 1)
        await calls(client, warmup, 16)
        await settle(gateway)
        result: dict = {}
        unit = gateway.unit.lower()
        for conc in (1, 16):
            gateway.zero()
            t0 = time.monotonic()
            await calls(client, n, conc)
            wall = time.monotonic() - t0
            total, ranked = gateway.count(top)
            result[f"c{conc}"] = {f"{unit}_per_call": total // n, "wall_s": round(wall, 2), "top": ranked}
            log(f"{transport}{' ' + name if name else ''} c={conc}: {total // n:,} {gateway.unit}/call")
        gateway.zero()
        idle = max(1, int(min(result["c1"]["wall_s"], 10)))
        await asyncio.sleep(idle)
        result[f"idle_{unit}_per_s"] = gateway.count()[0] // idle
        return result
    finally:
        if transport == "stdio":
            client.reader.cancel()
        await gateway.stop()
        if upstream:
            try:
                os.killpg(upstream.pid, 15)
            except ProcessLookupError:
                pass
            await upstream.wait()


async def settle(gateway: Counted, timeout: float = 300) -> None:
    """Waits until the gateway is quiet: the work its first connect set off (the catalog
    rebuilt, the tool index written, the search index built) would otherwise be counted
    against the calls."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        gateway.zero()
        await asyncio.sleep(2)
        if gateway.count()[0] // 2 < gateway.quiet_per_s:
            return
    log("the gateway never went quiet; counting anyway")


async def wait_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            return
        except OSError:
            await asyncio.sleep(0.2)
    raise RuntimeError(f"nothing listens on port {port}")


def report(r: dict) -> str:
    if "before" in r:  # a saved comparison
        return report(r["before"]) + "\n\n" + report(r["after"])
    unit = r.get("unit", "ir")
    how, short = {"ns": ("CPU time (ns, user + system) read from the process's CPU clock", "ns"),
                  "syscalls": ("system calls of every thread counted by strace -c -f", "syscalls")}.get(
        unit, ("instructions (Ir) counted by callgrind", "Ir"))
    lines = [f"# gateway CPU per call, {r['machine']}, {r['date']}, {r['commit']} ({r['bin']})",
             f"{r['calls']} echo calls per batch; {how}" + (f"; load {r['load']}" if "load" in r else ""), "",
             f"| path | c | {short}/call | idle {short}/s |", "|---|---:|---:|---:|"]
    for transport, v in r["results"].items():
        for conc in ("c1", "c16"):
            lines.append(f"| {transport} | {conc[1:]} | {v[conc][f'{unit}_per_call']:,} | {v[f'idle_{unit}_per_s']:,} |")
    what = "system calls per call, by name" if unit == "syscalls" else "exclusive Ir per call"
    for transport, v in r["results"].items():
        for conc in ("c1", "c16"):
            if not v[conc]["top"]:
                continue
            lines += ["", f"top functions, {transport} c={conc[1:]} ({what}):"]
            for row in v[conc]["top"]:
                lines.append(f"  {row['ir'] / r['calls']:>11,.1f}  {row['function']}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "profiling", "mcp-launch"))
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--only", choices=("stdio", "http"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the callgrind dumps")
    ap.add_argument("--clock", action="store_true",
                    help="no valgrind: CPU time per call from the gateway's CPU clock (release build)")
    ap.add_argument("--syscalls", action="store_true",
                    help="no valgrind: system calls per call, counted by strace -c -f attached per batch")
    ap.add_argument("--observe", metavar="SIDES",
                    help="comma-separated: off,metrics,traces — each transport once per side (issue 28)")
    ap.add_argument("--render", metavar="FILE", help="print the report of a saved --json result")
    a = ap.parse_args()
    if a.render:
        with open(a.render) as f:
            print(report(json.load(f)))
        return
    a.bin = os.path.abspath(a.bin)
    tmp = tempfile.mkdtemp(prefix="mcpl-gateway-cpu-")
    env = sandbox_env(tmp)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    results = {}
    sink = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    collector = f"http://127.0.0.1:{sink.server_address[1]}"
    try:
        for transport in ([a.only] if a.only else ["stdio", "http"]):
            counter = Straced if a.syscalls else Clocked if a.clock else Counted
            for name in (a.observe.split(",") if a.observe else [None]):
                flags, extra_env = observe_side(name, collector)
                key = f"{transport}/{name}" if name else transport
                results[key] = asyncio.run(measure(transport, a.bin, a.calls, a.warmup, a.top, tmp, env, counter,
                                                   (name or "", flags, extra_env)))
    finally:
        sink.shutdown()
        if a.keep:
            log(f"kept {tmp}")
        else:
            subprocess.run(["rm", "-rf", tmp])
    r = {"machine": f"{os.cpu_count()} cores, {platform.machine()}", "date": time.strftime("%Y-%m-%d"),
         "commit": commit, "bin": os.path.relpath(a.bin, ROOT), "calls": a.calls, "results": results,
         "unit": "syscalls" if a.syscalls else "ns" if a.clock else "ir", "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
         "exports": Sink.exports, "exported_bytes": Sink.spans_bytes}
    print(json.dumps(r, indent=1) if a.json else report(r))


if __name__ == "__main__":
    main()
