#!/usr/bin/env python3
"""Benchmark: a `search` process over an index of 10,000+ tools (issue: tool index and search).

Builds a realistic catalogue of 10,000 tools by replicating the evaluation tools of
tests/fixtures/search/tools.json (real servers' dumps plus authored fixtures), each server a
fault server (tests/fixtures/fault_server.py --tools-file) so the tools reach mcp-launch over
real MCP. Two shapes of ~10,000 tools: 20 servers x 500 tools and 1,000 servers x 2 tools
(`--cases 20x500,1000x2`; each fault server also lists its 8 builtin tools, so the totals are
10,160 and 10,000; the per-server costs of a search show in the second). Then:
  - cold: the first `search` (starts the servers, fills the tool index, builds and saves
    the search index). With more than 50 servers the tool index is filled first by `list`
    runs over batches of 50 (the same stack name, so the same server identities; a 2-core
    machine cannot start 1,000 Python servers at once within the handshake timeout), and the
    cold figure is the first `search` building its index from the full tool index;
  - warm: N `search` processes per query, end to end (process start, config, index load,
    query, output), timed from this script: p50 / p95 / max;
  - the floor: `mcp-launch --version` (process start alone), for reference.
Target: warm p50 < 20 ms in both shapes.

With `--model DIR` (an installed embedding model, e.g. ~/.local/share/mcp-launch/models/minilm-l6),
the same catalogue is then searched by meaning and words (`--method hybrid`): the first hybrid
search embeds every tool (the index cost of 10,000 tools, all cores), then warm hybrid searches
(model load, query embedding, vectors from the cache, fusion) are timed like the others.
Target (issue 15): warm hybrid p50 < 50 ms over 10k tools.

Usage: python3 bench/search_speed.py [--runs N] [--bin target/release/mcp-launch] [--cases 20x500,1000x2] [--model DIR]
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


BATCH = 50


def write_catalogue(tmp, fixtures, servers, per_server):
    """Writes the tool files and a config `big.json` of `servers` fault servers; returns the
    config's path and the server definitions."""
    defs = {}
    for k in range(servers):
        tools, seen = [], set()
        i = 0
        while len(tools) < per_server:
            t = dict(fixtures[(i + k * 37) % len(fixtures)])
            name = t["name"] if t["name"] not in seen else f"{t['name']}_{i}"
            seen.add(name)
            t["name"] = name
            tools.append(t)
            i += 1
        path = os.path.join(tmp, f"tools-{k}.json")
        with open(path, "w") as f:
            json.dump(tools, f)
        defs[f"srv{k:04d}"] = {"command": "python3", "args": [
            os.path.join(ROOT, "tests", "fixtures", "fault_server.py"), "--tools-file", path]}
    cfg = os.path.join(tmp, "big.json")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": defs}, f)
    return cfg, defs


def fill_tool_index(binary, tmp, defs, env):
    """Fills the tool index with `list` over batches of BATCH servers, each batch a config
    named `big.json` (stack `big`, as in the full config) in a directory of its own."""
    names = sorted(defs)
    for b in range(0, len(names), BATCH):
        d = os.path.join(tmp, f"batch-{b // BATCH:03d}")
        os.makedirs(d, exist_ok=True)
        cfg = os.path.join(d, "big.json")
        with open(cfg, "w") as f:
            json.dump({"mcpServers": {n: defs[n] for n in names[b:b + BATCH]}}, f)
        out = subprocess.run([binary, "--config", cfg, "list", "--json"], env=env, capture_output=True)
        bad = [s["name"] for s in json.loads(out.stdout or b'{"servers": []}')["servers"]
               if s["status"] != "connected"]
        if out.returncode != 0 or bad:
            sys.exit(f"filling the tool index failed for {bad}: {out.stderr.decode()[-500:]}")


def run_case(a, fixtures, servers, per_server):
    tmp = tempfile.mkdtemp(prefix="mcpl-search-bench-")
    cfg, defs = write_catalogue(tmp, fixtures, servers, per_server)
    env = dict(os.environ, XDG_CACHE_HOME=os.path.join(tmp, "cache"), NO_COLOR="1")
    base = [a.bin, "--config", cfg]
    prefilled = servers > BATCH
    if prefilled:
        fill_tool_index(a.bin, tmp, defs, env)

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

    print(machine.heading(f"Search speed, {servers} servers"))
    print()
    print(f"Catalogue: {servers} servers, {total:,} tools; search index file {size/1024/1024:.1f} MB; "
          f"{a.runs} runs per query; binary `{os.path.relpath(a.bin, ROOT)}`.")
    print()
    print("| query kind | query | p50 (ms) | p95 (ms) | max (ms) |")
    print("|---|---|---:|---:|---:|")
    for kind, q, w in rows:
        print(f"| {kind} | `{q}` | {pct(w,50)*1000:.1f} | {pct(w,95)*1000:.1f} | {w[-1]*1000:.1f} |")
    print(f"| floor | `mcp-launch --version` | {pct(floor,50)*1000:.1f} | {pct(floor,95)*1000:.1f} | {floor[-1]*1000:.1f} |")
    print()
    if prefilled:
        print(f"First search (the tool index filled beforehand by `list` in batches of {BATCH}; "
              f"builds and saves the search index): {cold*1000:.0f} ms.")
    else:
        print(f"First search (starts {servers} servers, builds and saves both indexes): {cold*1000:.0f} ms.")
    worst = max(pct(w, 50) for _, _, w in rows)
    print(f"**Warm `search` p50, worst query: {worst*1000:.1f} ms** (target < 20 ms).")
    print()
    if a.model:
        run_hybrid(a, base, env, total)


def run_hybrid(a, base, env, total):
    env = dict(env, MCP_LAUNCH_MODEL_DIR=a.model)
    t0 = time.perf_counter()
    out = subprocess.run(base + ["search", "warm up", "--method", "hybrid", "--json"], env=env,
                         capture_output=True)
    embed = time.perf_counter() - t0
    if out.returncode != 0:
        sys.exit(out.stderr.decode())
    cache = os.path.join(env["XDG_CACHE_HOME"], "mcp-launch")
    vec = [os.path.join(cache, n) for n in os.listdir(cache) if n.startswith("vectors-")]
    rows = [(kind, q, timed(base + ["search", q, "--method", "hybrid", "--json"], env, a.runs))
            for kind, q in QUERIES]
    print(f"Hybrid (`--method hybrid`, model `{os.path.basename(a.model.rstrip('/'))}`): "
          f"the first search embedded {total:,} tools in {embed:.1f} s "
          f"({embed / max(total, 1) * 1000:.1f} ms per tool, {os.cpu_count()} cores); vector cache "
          f"{os.path.getsize(vec[0]) / 1024 / 1024:.1f} MB.")
    print()
    print("| query kind | query | p50 (ms) | p95 (ms) | max (ms) |")
    print("|---|---|---:|---:|---:|")
    for kind, q, w in rows:
        print(f"| {kind} | `{q}` | {pct(w,50)*1000:.1f} | {pct(w,95)*1000:.1f} | {w[-1]*1000:.1f} |")
    worst = max(pct(w, 50) for _, _, w in rows)
    print()
    print(f"**Warm hybrid `search` p50, worst query: {worst*1000:.1f} ms** (target < 50 ms).")
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--cases", default="20x500,1000x2",
                    help="catalogue shapes, SERVERSxTOOLS_PER_SERVER, comma-separated")
    ap.add_argument("--model", help="an installed embedding model's directory: also time hybrid search")
    a = ap.parse_args()

    with open(os.path.join(ROOT, "tests", "fixtures", "search", "tools.json")) as f:
        fixtures = [t for tools in json.load(f).values() for t in tools]
    for case in a.cases.split(","):
        servers, per_server = (int(n) for n in case.lower().split("x"))
        run_case(a, fixtures, servers, per_server)


if __name__ == "__main__":
    main()
