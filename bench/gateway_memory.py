#!/usr/bin/env python3
"""bench/gateway_memory.py - the gateway's RSS with budgets on (issue 23 item 10).

`mcp-launch serve --mode full --max-output-tokens B` over stdio in front of the fault server;
--calls tool calls, four at a time: `echo` mostly, and every 100th a `huge` result of 200 KB
that the budget cuts (so the tokenizer is loaded and used). The gateway's VmRSS (anonymous
and file-backed) idle after `initialize`, right after the first cut, and at the end; VmHWM
over the run. `--before OTHER_BIN` runs the same with another binary first (e.g. main's),
for a side-by-side.

Usage: python3 bench/gateway_memory.py [--bin target/release/mcp-launch] [--before BIN]
       [--calls 10000] [--budget 2000] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, bench_env, log, proc_status  # noqa: E402
from gateway import Peer, one_config  # noqa: E402

HUGE_BYTES = 200_000
CONCURRENCY = 4


def rss(pid: int) -> dict:
    st = proc_status(pid) or {}
    mb = lambda k: st.get(k, 0) / 1024  # noqa: E731
    return {"rss": mb("VmRSS"), "anon": mb("RssAnon"), "file": mb("RssFile") + mb("RssShmem"),
            "hwm": mb("VmHWM")}


async def run(bin_path: str, calls: int, budget: int) -> dict:
    tmp = tempfile.mkdtemp(prefix="gw-mem-")
    try:
        env = bench_env(tmp)
        config = await one_config(bin_path, tmp, env)
        gateway = await Peer.start(
            [bin_path, "--config", config, "serve", "--mode", "full", "--max-output-tokens", str(budget)],
            tmp, env)
        await gateway.initialize()
        await gateway.request("tools/list")
        out = {"idle": rss(gateway.proc.pid)}
        cut = await gateway.request("tools/call", {"name": "fault__huge", "arguments": {"bytes": HUGE_BYTES}})
        text = cut["content"][0]["text"]
        if len(text) >= HUGE_BYTES:
            raise RuntimeError("the huge result was not cut: is the budget on?")
        out["after_first_cut"] = rss(gateway.proc.pid)

        async def worker(offset: int) -> None:
            for i in range(offset, calls, CONCURRENCY):
                if i % 100 == 99:
                    await gateway.request("tools/call", {"name": "fault__huge", "arguments": {"bytes": HUGE_BYTES}})
                else:
                    await gateway.request("tools/call", {"name": "fault__echo", "arguments": {"message": f"m{i}"}})

        await asyncio.gather(*(worker(k) for k in range(CONCURRENCY)))
        out["after_calls"] = rss(gateway.proc.pid)
        await gateway.close()
        return out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def report(results: dict, calls: int, budget: int) -> str:
    lines = [f"Gateway RSS (MB), `serve --mode full --max-output-tokens {budget}`, {calls} calls "
             f"(1 in 100 a {HUGE_BYTES // 1000} KB result cut):", "",
             "RSS (anonymous / file-backed) at each point; peak = VmHWM.", "",
             "| binary | idle | after the first cut | after the calls | peak |",
             "|---|---:|---:|---:|---:|"]
    cell = lambda m: f"{m['rss']:.1f} ({m['anon']:.1f} / {m['file']:.1f})"  # noqa: E731
    for label, r in results.items():
        lines.append(f"| {label} | {cell(r['idle'])} | {cell(r['after_first_cut'])} | "
                     f"{cell(r['after_calls'])} | {r['after_calls']['hwm']:.1f} |")
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--before", help="another binary to measure first, for comparison")
    ap.add_argument("--calls", type=int, default=10_000)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    results = {}
    for label, path in (("before", args.before), ("this", args.bin)):
        if path:
            log(f"{label}: {path}")
            results[label] = await run(os.path.abspath(path), args.calls, args.budget)
    print(json.dumps(results, indent=1) if args.json else report(results, args.calls, args.budget))


if __name__ == "__main__":
    asyncio.run(main())
