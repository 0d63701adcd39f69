#!/usr/bin/env python3
"""Benchmark: a `search` process over an index of 10,000+ tools (issue: tool index and search).

Builds a realistic catalogue of 20 servers x 500 tools by replicating the evaluation tools of
tests/fixtures/search/tools.json (real servers' dumps plus authored fixtures), each server a
fault server (tests/fixtures/fault_server.py --tools-file) so the tools reach mcp-launch over
real MCP. Then:
  - cold: the first `search` (starts the 20 servers, fills the tool index, builds and saves
    the search index);
  - warm: N `search` processes per query, end to end (process start, config, index load,
    query, output), timed from this script: p50 / p95 / max;
  - the floor: `mcp-launch --version` (process start alone), for reference.
Target: warm p50 < 20 ms.

Usage: python3 bench/search_speed.py [--runs N] [--bin target/release/mcp-launch]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUERIES = [
    ("task", "create a pull request for my branch"),
    ("keyword", "read file"),
    ("name", "list_allowed_directories"),
    ("paraphrase", "what time is it in another city"),
    ("no answer", "bake sourdough bread"),
]


def timed(args, env, runs):
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        walls.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            sys.exit(f"{args} failed: {proc.stderr.decode()[-500:]}")
    walls.sort()
    return walls


def pct(walls, p):
    return walls[min(len(walls) - 1, int(round(p / 100 * (len(walls) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--servers", type=int, default=20)
    ap.add_argument("--per-server", type=int, default=500)
    a = ap.parse_args()

    with open(os.path.join(ROOT, "tests", "fixtures", "search", "tools.json")) as f:
        fixtures = [t for tools in json.load(f).values() for t in tools]
    tmp = tempfile.mkdtemp(prefix="mcpl-search-bench-")
    servers = {}
    for k in range(a.servers):
        tools, seen = [], set()
        i = 0
        while len(tools) < a.per_server:
            t = dict(fixtures[(i + k * 37) % len(fixtures)])
            name = t["name"] if t["name"] not in seen else f"{t['name']}_{i}"
            seen.add(name)
            t["name"] = name
            tools.append(t)
            i += 1
        path = os.path.join(tmp, f"tools-{k}.json")
        with open(path, "w") as f:
            json.dump(tools, f)
        servers[f"srv{k:02d}"] = {"command": "python3", "args": [
            os.path.join(ROOT, "tests", "fixtures", "fault_server.py"), "--tools-file", path]}
    cfg = os.path.join(tmp, "big.json")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": servers}, f)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"), NO_COLOR="1")
    base = [a.bin, "--config", cfg]

    t0 = time.perf_counter()
    out = subprocess.run(base + ["search", "warm up", "--json"], env=env, capture_output=True)
    cold = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit(out.stderr.decode())
    listed = subprocess.run(base + ["list", "--json"], env=env, capture_output=True)
    total = sum(s["tools"] for s in json.loads(listed.stdout)["servers"])
    idx = [os.path.join(env["XDG_CACHE_HOME"], "mcp-launch", n)
           for n in os.listdir(os.path.join(env["XDG_CACHE_HOME"], "mcp-launch")) if n.startswith("search-")]
    size = os.path.getsize(idx[0]) if idx else 0

    floor = timed([a.bin, "--version"], env, a.runs)
    rows = []
    for kind, q in QUERIES:
        walls = timed(base + ["search", q, "--json"], env, a.runs)
        rows.append((kind, q, walls))

    print(machine.heading("Search speed"))
    print()
    print(f"Catalogue: {a.servers} servers, {total:,} tools; search index file {size/1024/1024:.1f} MB; "
          f"{a.runs} runs per query; binary `{os.path.relpath(a.bin, ROOT)}`.")
    print()
    print("| query kind | query | p50 (ms) | p95 (ms) | max (ms) |")
    print("|---|---|---:|---:|---:|")
    for kind, q, w in rows:
        print(f"| {kind} | `{q}` | {pct(w,50)*1000:.1f} | {pct(w,95)*1000:.1f} | {w[-1]*1000:.1f} |")
    print(f"| floor | `mcp-launch --version` | {pct(floor,50)*1000:.1f} | {pct(floor,95)*1000:.1f} | {floor[-1]*1000:.1f} |")
    print()
    print(f"First search (starts {a.servers} servers, builds and saves both indexes): {cold*1000:.0f} ms.")
    worst = max(pct(w, 50) for _, _, w in rows)
    print(f"**Warm `search` p50, worst query: {worst*1000:.1f} ms** (target < 20 ms).")


if __name__ == "__main__":
    main()
