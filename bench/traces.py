#!/usr/bin/env python3
"""bench/traces.py - the gateway's added latency with traces off and on (issue 28).

  python3 bench/traces.py [--bin target/release/mcp-launch] [--calls N] [--json]

A raw stdio JSON-RPC client calls `echo` on the fault server directly, through a gateway with
traces off, and through one with `--otlp` pointed at a local OTLP/HTTP receiver (which reads
and discards each export), p50/p99 at concurrency 1, in interleaved rounds so drift on a
busy machine hits every side alike. Every call carries a W3C `traceparent` in `_meta`, as a
traced client's would. "Added" is the gateway's figure minus the direct one.
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


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--calls", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=8)
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
    config = await one_config(os.path.abspath(args.bin), tmp, env)
    gateway = [os.path.abspath(args.bin), "--config", config, "serve", "--mode", "full"]
    peers = {
        "direct": (await Peer.start([sys.executable, FAULT], tmp, env), "echo"),
        "off": (await Peer.start(gateway, tmp, env), "fault__echo"),
        "on": (await Peer.start(gateway + ["--otlp", collector], tmp, env), "fault__echo"),
    }
    for peer, name in peers.values():
        await peer.initialize()
        await calls(peer, name, 100)  # warm-up
    samples: dict[str, list[float]] = {side: [] for side in peers}
    log(f"{args.rounds} rounds of {args.calls // args.rounds} calls per side")
    for _ in range(args.rounds):
        for side, (peer, name) in peers.items():
            samples[side] += await calls(peer, name, args.calls // args.rounds)
    for peer, _ in peers.values():
        await peer.close()
    server.shutdown()
    figures = {side: {"p50_ms": statistics.median(s), "p99_ms": pct(s, 0.99)}
               for side, s in samples.items()}
    for side in ("off", "on"):
        figures[side]["added_p50_ms"] = figures[side]["p50_ms"] - figures["direct"]["p50_ms"]
    figures["on_minus_off_p50_ms"] = figures["on"]["p50_ms"] - figures["off"]["p50_ms"]
    figures["exports"] = Sink.exports
    figures["exported_bytes"] = Sink.spans_bytes
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    for side in ("direct", "off", "on"):
        f = figures[side]
        added = f" (added {f['added_p50_ms']:+.3f} ms)" if side != "direct" else ""
        print(f"{side:>6}: p50 {f['p50_ms']:.3f} ms, p99 {f['p99_ms']:.3f} ms{added}")
    print(f"on - off, p50: {figures['on_minus_off_p50_ms']:+.3f} ms; "
          f"{Sink.exports} exports, {Sink.spans_bytes} bytes received")


if __name__ == "__main__":
    asyncio.run(main())
