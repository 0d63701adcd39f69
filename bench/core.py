#!/usr/bin/env python3
"""Benchmark of the core CLI (issue: core config, client and discovery CLI).

Figures, all on the real servers installed by scripts/install-test-deps.sh:

1. `list` over 10 servers (everything x3, filesystem x3, time x2, memory x2):
   - each server's single handshake measured alone by this script's own minimal client
     (spawn, initialize, notifications/initialized, tools/list, close): wall time and CPU time
     of the server process;
   - the physical limit = max(slowest single handshake, sum of handshake CPU / cores);
   - the sequential cost = sum of single handshake wall times (what a sequential preflight pays);
   - `mcp-launch list` wall time over all 10, measured right after the singles in each round;
     the figure is the median over rounds of the ratio list wall / limit.
2. `call everything echo`:
   - the server's own work, measured by the minimal client (spawn → handshake → tools/list →
     tools/call → exit), against `mcp-launch call` end to end: the difference is what our
     process adds;
   - peak RSS (VmHWM) of the mcp-launch process itself, sampled from /proc while it runs.

Usage: python3 bench/core.py [--runs N] [--bin target/release/mcp-launch]
Prints a markdown report on stdout.
"""
import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402
from common import read_response, rpc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN_DIR = os.path.join(ROOT, ".deps", "npm", "node_modules", ".bin")


def servers(tmp):
    everything = [os.path.join(BIN_DIR, "mcp-server-everything")]
    filesystem = [os.path.join(BIN_DIR, "mcp-server-filesystem"), tmp]
    memory = [os.path.join(BIN_DIR, "mcp-server-memory")]
    time_srv = [os.path.join(ROOT, ".deps", "venv-time", "bin", "mcp-server-time")]
    out = {}
    for i in range(3):
        out[f"everything-{i}"] = everything
        out[f"filesystem-{i}"] = filesystem
    for i in range(2):
        out[f"time-{i}"] = time_srv
        out[f"memory-{i}"] = memory
    return out


def config_json(srvs, tmp):
    entries = {}
    for name, argv in srvs.items():
        entry = {"command": argv[0], "args": argv[1:]}
        if name.startswith("memory"):
            entry["env"] = {"MEMORY_FILE_PATH": os.path.join(tmp, f"{name}.jsonl")}
        entries[name] = entry
    return {"mcpServers": entries}


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def direct_session(argv, env=None, call=None):
    """Minimal client: returns (wall seconds, server CPU seconds)."""
    cpu0 = child_cpu()
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}})
    read_response(proc, 1)
    rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    read_response(proc, 2)
    if call:
        rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call})
        read_response(proc, 3)
    proc.stdin.close()
    proc.terminate()
    proc.wait()
    return time.perf_counter() - t0, child_cpu() - cpu0


def run_ours(args, env=None):
    """Runs mcp-launch; returns (wall seconds, peak RSS kB of mcp-launch itself, stdout)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    peak = [0]

    def sample():
        path = f"/proc/{proc.pid}/status"
        while proc.poll() is None:
            try:
                with open(path) as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            peak[0] = max(peak[0], int(line.split()[1]))
            except OSError:
                return
            time.sleep(0.002)

    sampler = threading.Thread(target=sample)
    sampler.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - t0
    sampler.join()
    return wall, peak[0], out


def check_all_connected(out):
    data = json.loads(out)
    bad = [s["name"] for s in data["servers"] if s["status"] != "connected"]
    if bad:
        sys.exit(f"servers failed during the benchmark: {bad}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    a = ap.parse_args()
    cores = os.cpu_count() or 1
    tmp = tempfile.mkdtemp(prefix="mcpl-bench-")
    srvs = servers(tmp)
    cfg = os.path.join(tmp, "bench.json")
    with open(cfg, "w") as f:
        json.dump(config_json(srvs, tmp), f)
    env = dict(os.environ, NO_COLOR="1")

    # Warm caches (node module loading, python bytecode) once.
    for argv in set(map(tuple, srvs.values())):
        direct_session(list(argv))

    # Token counts are cached in the user cache dir; measure a cold first run on an empty
    # cache, then warm runs (what every later `list` costs).
    cache = os.path.join(tmp, "cache")
    env["XDG_CACHE_HOME"] = cache
    cold_wall, cold_rss, out = run_ours([a.bin, "--config", cfg, "list", "--refresh", "--json"], env=env)
    check_all_connected(out)

    # Paired rounds: the single handshakes and the parallel `list` measured back to back, so
    # both see the same machine (this VM's speed drifts by ±15% over minutes).
    rounds = []
    for _ in range(a.runs):
        walls, cpus = {}, {}
        for name, argv in srvs.items():
            e = dict(env, MEMORY_FILE_PATH=os.path.join(tmp, f"{name}.jsonl"))
            walls[name], cpus[name] = direct_session(argv, env=e)
        # --refresh: every server checked live (else the tool index would answer).
        w, rss, out = run_ours([a.bin, "--config", cfg, "list", "--refresh", "--json"], env=env)
        check_all_connected(out)
        slowest = max(walls.values())
        limit = max(slowest, sum(cpus.values()) / cores)
        rounds.append({"walls": walls, "cpus": cpus, "slowest": slowest, "cpu_sum": sum(cpus.values()),
                       "seq": sum(walls.values()), "limit": limit, "list": w, "rss": rss,
                       "ratio": w / limit})
    med = lambda key: statistics.median(r[key] for r in rounds)
    singles = {name: (statistics.median(r["walls"][name] for r in rounds),
                      statistics.median(r["cpus"][name] for r in rounds)) for name in srvs}
    slowest, cpu_sum, seq_sum, limit = med("slowest"), med("cpu_sum"), med("seq"), med("limit")
    list_wall, ratio = med("list"), med("ratio")
    list_rss = [r["rss"] for r in rounds]

    # `list` answered from the tool index: nothing is started.
    cached = [run_ours([a.bin, "--config", cfg, "list", "--json"], env=env) for _ in range(a.runs)]
    cached_wall = statistics.median(w for w, _, _ in cached)
    if any(s["status"] != "cached" for _, _, out in cached for s in json.loads(out)["servers"]):
        sys.exit("expected every server to be answered from the tool index")

    # call echo: server's own work vs our end to end.
    ev = srvs["everything-0"]
    direct_calls = [direct_session(ev, env=env, call={"name": "echo", "arguments": {"message": "hi"}})[0]
                    for _ in range(a.runs * 2)]
    ours = [run_ours([a.bin, "--config", cfg, "call", "everything-0", "echo", '{"message":"hi"}', "--json"], env=env)
            for _ in range(a.runs * 2)]
    for _, _, out in ours:
        if json.loads(out).get("success") is not True:
            sys.exit(f"call failed: {out!r}")
    direct_call = statistics.median(direct_calls)
    our_call = statistics.median(w for w, _, _ in ours)
    call_rss = max(r for _, r, _ in ours)

    print(machine.heading("Core CLI"))
    print()
    print(f"Rounds: {a.runs} (medians). Binary: `{os.path.relpath(a.bin, ROOT)}`.")
    print()
    print("| server | single handshake wall (ms) | server CPU (ms) |")
    print("|---|---:|---:|")
    for name, (w, c) in singles.items():
        print(f"| {name} | {w*1000:.0f} | {c*1000:.0f} |")
    print()
    print("| figure | value |")
    print("|---|---:|")
    print(f"| slowest single handshake | {slowest*1000:.0f} ms |")
    print(f"| CPU of all handshakes ÷ {cores} cores | {cpu_sum/cores*1000:.0f} ms |")
    print(f"| physical limit = max of the two | {limit*1000:.0f} ms |")
    print(f"| sequential preflight (sum of single handshakes) | {seq_sum*1000:.0f} ms |")
    ratios = ", ".join(f"{r['ratio']:.2f}" for r in rounds)
    print(f"| **`mcp-launch list` over 10 servers** | **{list_wall*1000:.0f} ms** |")
    print(f"| **ratio to the limit (median of paired rounds)** | **{ratio:.2f} ×** (target ≤ 1.2; rounds: {ratios}) |")
    print(f"| speed-up over a sequential preflight | {seq_sum/list_wall:.1f} × |")
    print(f"| first `list` on an empty token cache (loads the tokenizer) | {cold_wall*1000:.0f} ms, peak RSS {cold_rss/1024:.1f} MB |")
    print(f"| `list` peak RSS of mcp-launch, warm cache | {statistics.median(list_rss)/1024:.1f} MB |")
    print(f"| `list` answered from the tool index (nothing started) | {cached_wall*1000:.1f} ms |")
    print(f"| server's own work for `echo` (spawn → handshake → list → call → exit) | {direct_call*1000:.0f} ms |")
    print(f"| `mcp-launch call everything echo` end to end | {our_call*1000:.0f} ms |")
    print(f"| **time our process adds to `call`** | **{(our_call-direct_call)*1000:.0f} ms** |")
    print(f"| **peak RSS of mcp-launch during `call`** | **{call_rss/1024:.1f} MB** (target < 15 MB) |")


if __name__ == "__main__":
    main()
