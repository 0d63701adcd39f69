#!/usr/bin/env python3
"""bench/metrics_overhead.py - what recording metrics adds to a call through the gateway (issue 28).

  python3 bench/metrics_overhead.py [--bin target/debug/mcp-launch] [--calls N] [--rounds R] [--json]

Two gateways (`serve --mode full`, stdio) in front of the fault server's `echo`, one with
metrics on (the default) and one with `MCP_LAUNCH_METRICS=off`, both warm; a raw stdio
JSON-RPC client calls through each in alternating rounds (so load from other processes hits
both alike), at concurrency 1. Reported: p50/p99 per side over all rounds, the added p50
(on - off) of each round and their median, and the calls/s. The goal is <= 0.05 ms p50 added.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, log  # noqa: E402
from gateway import Peer, one_config, pct  # noqa: E402


async def timed_calls(peer: Peer, calls: int) -> list[float]:
    import time

    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        await peer.request("tools/call", {"name": "fault__echo", "arguments": {"message": "hi"}})
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "debug", "mcp-launch"))
    ap.add_argument("--calls", type=int, default=500, help="calls per side per round")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="bench-metrics-")
    env = dict(os.environ, NO_COLOR="1", HOME=tmp, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    for key in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "MCP_LAUNCH_DAEMON", "MCP_LAUNCH_METRICS"):
        env.pop(key, None)
    config = await one_config(os.path.abspath(args.bin), tmp, env)
    argv = [os.path.abspath(args.bin), "--config", config, "serve", "--mode", "full"]
    sides = {
        "on": await Peer.start(argv, tmp, env),
        "off": await Peer.start(argv, tmp, dict(env, MCP_LAUNCH_METRICS="off")),
    }
    for peer in sides.values():
        await peer.initialize()
        await timed_calls(peer, 200)  # warm-up: the server started, the paths hot
    samples: dict[str, list[float]] = {"on": [], "off": []}
    added = []
    for n in range(args.rounds):
        order = ["on", "off"] if n % 2 == 0 else ["off", "on"]
        round_p50 = {}
        for side in order:
            got = await timed_calls(sides[side], args.calls)
            samples[side] += got
            round_p50[side] = statistics.median(got)
        added.append(round_p50["on"] - round_p50["off"])
        log(f"round {n + 1}: p50 on {round_p50['on']:.3f} ms, off {round_p50['off']:.3f} ms")
    for peer in sides.values():
        await peer.close()
    result = {
        side: {"p50_ms": statistics.median(s), "p99_ms": pct(s, 0.99), "calls": len(s)}
        for side, s in samples.items()
    }
    result["added_p50_ms_per_round"] = added
    result["added_p50_ms_median"] = statistics.median(added)
    result["added_p50_ms_overall"] = result["on"]["p50_ms"] - result["off"]["p50_ms"]
    result["bin"] = args.bin
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"metrics on : p50 {result['on']['p50_ms']:.3f} ms, p99 {result['on']['p99_ms']:.3f} ms")
    print(f"metrics off: p50 {result['off']['p50_ms']:.3f} ms, p99 {result['off']['p99_ms']:.3f} ms")
    print(f"added p50 (on - off): median of rounds {result['added_p50_ms_median']:+.4f} ms, "
          f"overall {result['added_p50_ms_overall']:+.4f} ms, rounds {[round(a, 4) for a in added]}")


if __name__ == "__main__":
    asyncio.run(main())
