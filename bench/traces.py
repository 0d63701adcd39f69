#!/usr/bin/env python3
"""bench/traces.py - the gateway's added latency with traces off and on (issue 28).

  python3 bench/traces.py [--bin target/release/mcp-launch] [--calls N] [--json]
                          [--transport stdio,http]

stdio: a raw stdio JSON-RPC client calls `echo` on the fault server directly, through a
gateway with traces off, and through one with `--otlp` pointed at a local OTLP/HTTP receiver
(which reads and discards each export), p50/p99 at concurrency 1, in interleaved rounds so
drift on a busy machine hits every side alike. Every call carries a W3C `traceparent` in
`_meta`, as a traced client's would. "Added" is the gateway's figure minus the direct one.

http: the same two gateways as `serve --http` (the fault server behind each over stdio), a
2025-11-25 session on a kept-alive connection each (`bench/gateway_cpu.py`'s client), every
call carrying `traceparent` both as the HTTP header and in `_meta`; the sides are off and on
(the fault server has no HTTP transport of its own to call directly), so the figure is on − off.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, log  # noqa: E402
from gateway import FAULT, Peer, one_config, pct  # noqa: E402

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


class Sink(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that takes every export and keeps nothing but a count."""

    exports = 0
    spans_bytes = 0

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        Sink.exports += 1
        Sink.spans_bytes += len(body)
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


async def calls(peer: Peer, name: str, count: int) -> list[float]:
    samples = []
    for _ in range(count):
        t0 = time.perf_counter()
        await peer.request("tools/call", {"name": name, "arguments": {"message": "hi"},
                                          "_meta": {"traceparent": TRACEPARENT}})
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


class HttpPeer:
    """A 2025-11-25 session with `serve --http` on one kept-alive connection; every call
    carries `traceparent` as the HTTP header too (a traced HTTP client sends it there)."""

    def __init__(self, proc: asyncio.subprocess.Process, port: int) -> None:
        self.proc, self.port = proc, port
        self.connection = None

    @classmethod
    async def start(cls, argv: list[str], cwd: str, env: dict) -> "HttpPeer":
        from common import free_ports  # noqa: E402 (here: gateway_cpu imports this module)
        port = free_ports(1)
        proc = await asyncio.create_subprocess_exec(
            *argv, "--http", f"127.0.0.1:{port}", "--no-auth", cwd=cwd, env=env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
        return cls(proc, port)

    async def initialize(self) -> None:
        from gateway_cpu import Http, wait_port  # noqa: E402 (see above)
        await wait_port(self.port, 120)
        session = await Http(self.port).open()
        self.connection = session.worker()
        self.connection.extra_head = [f"traceparent: {TRACEPARENT}"]

    async def request(self, method: str, params: dict) -> dict:
        return await self.connection.request(method, params)

    async def close(self) -> None:
        if self.connection and self.connection.writer:
            self.connection.writer.close()
        self.proc.terminate()
        try:
            await asyncio.wait_for(self.proc.wait(), 15)
        except asyncio.TimeoutError:
            self.proc.kill()


async def measure(transport: str, args, tmp: str, env: dict, collector: str) -> dict:
    """One transport's sides, interleaved in rounds; p50/p99 of each and the differences."""
    config = await one_config(os.path.abspath(args.bin), tmp, env)
    gateway = [os.path.abspath(args.bin), "--config", config, "serve", "--mode", "full"]
    if transport == "stdio":
        peers = {
            "direct": (await Peer.start([sys.executable, FAULT], tmp, env), "echo"),
            "off": (await Peer.start(gateway, tmp, env), "fault__echo"),
            "on": (await Peer.start(gateway + ["--otlp", collector], tmp, env), "fault__echo"),
        }
    else:
        peers = {
            "off": (await HttpPeer.start(gateway, tmp, env), "fault__echo"),
            "on": (await HttpPeer.start(gateway + ["--otlp", collector], tmp, env), "fault__echo"),
        }
    for peer, name in peers.values():
        await peer.initialize()
        await calls(peer, name, 100)  # warm-up
    samples: dict[str, list[float]] = {side: [] for side in peers}
    log(f"{transport}: {args.rounds} rounds of {args.calls // args.rounds} calls per side")
    for _ in range(args.rounds):
        for side, (peer, name) in peers.items():
            samples[side] += await calls(peer, name, args.calls // args.rounds)
    for peer, _ in peers.values():
        await peer.close()
    figures = {side: {"p50_ms": statistics.median(s), "p99_ms": pct(s, 0.99)}
               for side, s in samples.items()}
    if "direct" in figures:
        for side in ("off", "on"):
            figures[side]["added_p50_ms"] = figures[side]["p50_ms"] - figures["direct"]["p50_ms"]
    figures["on_minus_off_p50_ms"] = figures["on"]["p50_ms"] - figures["off"]["p50_ms"]
    return figures


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--transport", default="stdio", help="comma-separated: stdio,http")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-traces-")
    env = dict(os.environ, NO_COLOR="1", HOME=tmp, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    for key in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "MCP_LAUNCH_DAEMON") + tuple(
            k for k in os.environ if k.startswith("OTEL_")):
        env.pop(key, None)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Sink)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    collector = f"http://127.0.0.1:{server.server_address[1]}"
    figures: dict = {"load": os.getloadavg()[0]}
    for transport in args.transport.split(","):
        figures[transport] = await measure(transport, args, tmp, env, collector)
    server.shutdown()
    figures["exports"] = Sink.exports
    figures["exported_bytes"] = Sink.spans_bytes
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    for transport in args.transport.split(","):
        got = figures[transport]
        for side in ("direct", "off", "on"):
            if side not in got:
                continue
            f = got[side]
            added = f" (added {f['added_p50_ms']:+.3f} ms)" if "added_p50_ms" in f else ""
            print(f"{transport} {side:>6}: p50 {f['p50_ms']:.3f} ms, p99 {f['p99_ms']:.3f} ms{added}")
        print(f"{transport} on - off, p50: {got['on_minus_off_p50_ms']:+.3f} ms")
    print(f"{Sink.exports} exports, {Sink.spans_bytes} bytes received")


if __name__ == "__main__":
    asyncio.run(main())
