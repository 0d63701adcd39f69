#!/usr/bin/env python3
"""Benchmark: what `up` keeps resident (issue 11: native total <= 15 MB).

One stack `a` = mcp-server-everything + mcp-server-time, `up --config a.json --tunnel none
--json --controller C` in a fresh working directory, for C in native and mcpo, each on an
empty cache (the first run of a new user: nothing in the tool index or the token cache) and on
a warm one (the cache of that first run). For each run, the memory of the process tree minus
the MCP servers — `up` alone for native; `up` plus mcpo for mcpo — right after both fronts
answer and again after --calls echo calls through the front:
  - RSS (VmRSS), split into anonymous memory (what the processes allocated: RssAnon) and
    file-backed pages (the programs' code and read-only data mapped from the page cache,
    shared with every other process running them: RssFile + RssShmem);
  - the peak (VmHWM) over the run.

Usage: python3 bench/up_memory.py [--calls N] [--bin target/release/mcp-launch] [--json]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402
from common import (  # noqa: E402
    ROOT, Caller, Up, bench_env, finish, log, prepare_run, proc_status, stack_config, write_json)

TARGET_MB = 15.0


def ours(up):
    """Pids of the tree minus the MCP servers: `up`, and mcpo when it is the controller."""
    pids = [up.proc.pid]
    controller = up.state()["stacks"][0].get("controller_process")
    if controller:
        pids.append(controller["pgid"])
    return pids


def measure(pids):
    """Summed {rss, anon, file, hwm} in MB over `pids`."""
    total = {"rss": 0, "anon": 0, "file": 0, "hwm": 0}
    for pid in pids:
        st = proc_status(pid) or {}
        total["rss"] += st.get("VmRSS", 0)
        total["anon"] += st.get("RssAnon", 0)
        total["file"] += st.get("RssFile", 0) + st.get("RssShmem", 0)
        total["hwm"] += st.get("VmHWM", 0)
    return {k: v / 1024 for k, v in total.items()}


def one_run(bin_copy, cfg, workdir, env, controller, calls):
    up = Up(bin_copy, [cfg], workdir, env, extra_args=("--controller", controller))
    try:
        if up.wait_ready()[0] is None:
            sys.exit(f"{controller}: the front never answered; see {workdir}/up.stderr")
        pids = ours(up)
        ready = measure(pids)
        key = up.doc["stacks"][0]["api_key"]
        caller = Caller(up.front_base, {"X-API-Key": key, "Content-Type": "application/json"})
        try:
            for _ in range(calls):
                caller.call()
        finally:
            caller.close()
        served = measure(pids)
        return {"ready": ready, "served": served}
    finally:
        up.stop()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    tmp, bin_copy, commit = prepare_run(a.bin, "mcpl-up-memory-")
    result = None
    try:
        cfg = os.path.join(tmp, "a.json")
        write_json(cfg, stack_config())
        runs = []
        for controller in ("native", "mcpo"):
            env = bench_env(os.path.join(tmp, f"cache-{controller}"))
            for cache in ("empty", "warm"):
                log(f"{controller}, {cache} cache")
                workdir = os.path.join(tmp, f"{controller}-{cache}")
                runs.append(dict(controller=controller, cache=cache,
                                 **one_run(bin_copy, cfg, workdir, env, controller, a.calls)))
        result = {"commit": commit, "calls": a.calls, "runs": runs}
    finally:
        finish(tmp, a.keep, result, a.json, report)


def report(r):
    lines = [machine.heading("`up` memory"), "",
             f"Commit {r['commit']}. One stack (everything + time), `up --tunnel none`; the tree "
             f"minus the MCP servers (`up`, plus mcpo when it is the controller). MB; anon = "
             f"allocated by the processes, file = program code and data mapped from the page "
             f"cache (shared). Served = after {r['calls']:,} echo calls through the front.", "",
             "| controller | cache | ready RSS | anon | file | served RSS | anon | file | peak (VmHWM) |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for run in r["runs"]:
        ready, served = run["ready"], run["served"]
        lines.append(
            f"| {run['controller']} | {run['cache']} | {ready['rss']:.1f} | {ready['anon']:.1f} | "
            f"{ready['file']:.1f} | **{served['rss']:.1f}** | {served['anon']:.1f} | "
            f"{served['file']:.1f} | {served['hwm']:.1f} |")
    native = [run["served"]["rss"] for run in r["runs"] if run["controller"] == "native"]
    lines += ["", f"**Native, worst RSS while serving: {max(native):.1f} MB** (target <= {TARGET_MB:.0f} MB)."]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
