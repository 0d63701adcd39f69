#!/usr/bin/env python3
"""Benchmark of `mcp-launch up` (issue: up/status/share/openapi/down).

Figures, all on the real servers installed by scripts/install-test-deps.sh and the real mcpo:

1. Time to up, 2 stacks x 3 servers (stack a: everything, time, memory; stack b: filesystem,
   git, everything), `up --tunnel none --json`, each run in a fresh working directory:
   - `ready_ms` as `up` reports it in its JSON, the wall time until that JSON is on stdout,
     and the wall time until both fronts' `/healthz` answer 200 (polled from the start);
   - where the time goes, from `up`'s own debug log (`--log-file`): preflight, the step
     between preflight and mcpo, mcpo starting, spec merge and front;
   - the floor, measured in the same round: a bare mcpo with stack a's servers until its
     `/openapi.json` answers, and both stacks' bare mcpos started at once until both answer
     (mcpo connects its servers one after another; `up` starts it after a parallel preflight);
   - the first `up` on an empty token cache is reported apart (it loads the tokenizer).
2. Proxy overhead: `POST /everything/echo {"message":"hi"}` through the front (X-API-Key)
   against a mcpo started by this script with the same servers (Authorization: Bearer), one
   kept-alive connection each, interleaved in blocks (ABBA) so drift hits both: p50, p99, mean.
3. RSS (VmRSS / VmHWM from /proc) of the `up` process right after ready and after the latency
   run; of each mcpo and of its process group (mcpo + its servers) for context.

Every process started here is stopped at the end: `up` by SIGTERM (then its recorded process
groups are checked), our own mcpos by their process group.

Usage: python3 bench/launch.py [--rounds N] [--calls N] [--bin target/release/mcp-launch] [--json]
Prints a markdown report on stdout (with --json, the raw figures as JSON instead; --render FILE
prints the report of such a file).
"""
import argparse
import datetime
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402
from common import (  # noqa: E402
    DEPS, ECHO_BODY, MCPO, NPM_BIN, ROOT, UP_TIMEOUT, Caller, Up, add_run_options, bench_env,
    descendants, end_leftovers, finish, free_ports, lat_stats, log, ms, parse_run_args, prepare_run,
    proc_status, spread, stop_group, tree_rss, wait_200, write_json)


# ---------------------------------------------------------------- setup


def stack_servers(tmp):
    """The two stacks: {stack: {server: entry}} in mcpServers format."""
    files = os.path.join(tmp, "files")
    repo = os.path.join(tmp, "repo")
    os.makedirs(files, exist_ok=True)
    with open(os.path.join(files, "hello.txt"), "w") as f:
        f.write("hello\n")
    if not os.path.isdir(os.path.join(repo, ".git")):
        subprocess.run(["git", "init", "-q", repo], check=True)
        subprocess.run(["git", "-C", repo, "-c", "user.name=bench", "-c", "user.email=bench@localhost",
                        "commit", "-q", "--allow-empty", "-m", "init"], check=True)
    everything = {"command": os.path.join(NPM_BIN, "mcp-server-everything"), "args": []}
    return {
        "a": {
            "everything": everything,
            "time": {"command": os.path.join(DEPS, "venv-time", "bin", "mcp-server-time"), "args": []},
            "memory": {"command": os.path.join(NPM_BIN, "mcp-server-memory"), "args": [],
                       "env": {"MEMORY_FILE_PATH": os.path.join(tmp, "memory-a.jsonl")}},
        },
        "b": {
            "filesystem": {"command": os.path.join(NPM_BIN, "mcp-server-filesystem"), "args": [files]},
            "git": {"command": os.path.join(DEPS, "venv-git", "bin", "mcp-server-git"),
                    "args": ["--repository", repo]},
            "everything": everything,
        },
    }


def mcpo_config(servers, memory_file):
    """The servers as mcpo's own config (the same shape `up` writes), with a memory file of
    its own so two graphs never share one."""
    out = {}
    for name, entry in servers.items():
        e = {"command": entry["command"], "args": entry["args"], "env": dict(entry.get("env", {}))}
        if "MEMORY_FILE_PATH" in e["env"]:
            e["env"]["MEMORY_FILE_PATH"] = memory_file
        out[name] = e
    return {"mcpServers": out}


# ---------------------------------------------------------------- up


LOG_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z\s")


def log_time(line):
    m = LOG_TS.match(line)
    if not m:
        return None
    stamp = m.group(1)
    whole, frac = stamp.split(".")
    dt = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return dt.timestamp() + float("0." + frac)


def phases_from_log(path, epoch0, stacks):
    """Seconds since our Popen of each step, from `up`'s debug log; None where not found."""
    marks = {"preflight_start": None, "preflight_end": None, "mcpo_start": None}
    mcpo_ready = {}
    try:
        with open(path, errors="replace") as f:
            lines = f.readlines()
    except OSError:
        return None
    for line in lines:
        ts = log_time(line)
        if ts is None:
            continue
        at = ts - epoch0
        if marks["preflight_start"] is None and 'step: "preflight of' in line:
            marks["preflight_start"] = at
        elif marks["mcpo_start"] is None and "tools listed" in line:
            marks["preflight_end"] = at
        elif marks["mcpo_start"] is None and 'step: "starting mcpo"' in line:
            marks["mcpo_start"] = at
        else:
            for s in stacks:
                if s not in mcpo_ready and f"[mcpo#{s}]" in line and '"GET /openapi.json HTTP/1.1" 200' in line:
                    mcpo_ready[s] = at
    if None in marks.values() or len(mcpo_ready) != len(stacks):
        return None
    marks["mcpo_ready"] = max(mcpo_ready.values())
    return marks


def run_up_round(bin_path, configs, workdir, env, with_log=True):
    """One `up` from start to ready, measured, then stopped."""
    log_file = workdir + ".log" if with_log else None
    up = Up(bin_path, configs, workdir, env, log_file=log_file)
    try:
        healthz = up.wait_ready()
        doc = up.doc
        ok = doc is not None and doc.get("success") is True and not doc.get("errors") \
            and None not in healthz
        rss = proc_status(up.proc.pid) if ok else None
        phases = phases_from_log(log_file, up.epoch0, up.stacks) if ok and log_file else None
    finally:
        stopped = up.stop()
    if not ok:
        sys.exit(f"up failed: json={json.dumps(doc)[:2000] if doc else None}\n"
                 f"stderr: {up.stderr_text()[-2000:]}")
    took, code, survivors = stopped
    return {
        "ready_ms": doc["ready_ms"],
        "json_s": up.json_at,
        "healthz_s": max(healthz),
        "healthz_each_s": healthz,
        "phases": phases,
        "rss_kb": rss,
        "stop_s": took,
        "exit_code": code,
        "leftovers": survivors,
        "warnings": sum(len(s.get("warnings", [])) for s in doc["stacks"]),
        "operations": {s["stack"]: s["operations"] for s in doc["stacks"]},
        "stderr": up.stderr_text().strip(),
    }


# ---------------------------------------------------------------- bare mcpo


class Mcpo:
    """A mcpo started by this script, in its own process group."""

    def __init__(self, config_path, logdir, env):
        self.port = free_ports(1)
        self.key = "bench-" + os.urandom(12).hex()
        self.log = open(os.path.join(logdir, f"mcpo-{self.port}.log"), "wb")
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [MCPO, "--host", "127.0.0.1", "--port", str(self.port), "--api-key", self.key,
             "--config", config_path],
            env=dict(env, PYTHONUNBUFFERED="1"), stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.pgid = self.proc.pid

    def wait_ready(self):
        # 20 ms polls: a floor (`up` itself polls mcpo every 100 ms).
        return wait_200(self.port, "/openapi.json", self.t0, self.t0 + UP_TIMEOUT, 0.02)

    def stop(self):
        """Ends its group, then whatever of its tree outlived it; returns the leftovers."""
        tree = descendants(self.pgid)
        stop_group(self.pgid)
        self.proc.wait()
        self.log.close()
        return end_leftovers(tree)


def run_bare(config_paths, logdir, env):
    """Starts one mcpo per config at once; seconds until every one answers /openapi.json."""
    mcpos = [Mcpo(c, logdir, env) for c in config_paths]
    leftovers = 0
    try:
        times = [m.wait_ready() for m in mcpos]
    finally:
        for m in mcpos:
            leftovers += m.stop()
    if None in times:
        sys.exit(f"bare mcpo did not answer: see {logdir}/mcpo-*.log")
    return max(times), leftovers


# ---------------------------------------------------------------- latency


def arrival_probe(port, key, n):
    """Echo through the front on a raw kept-alive socket: when the response's first bytes
    and its last byte arrive (medians, seconds), and how many responses came in one read."""
    req = ("POST /everything/echo HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           f"X-API-Key: {key}\r\nContent-Type: application/json\r\n"
           f"Content-Length: {len(ECHO_BODY)}\r\n\r\n").encode() + ECHO_BODY
    first, last, whole = [], [], 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        for _ in range(n):
            t = time.perf_counter()
            s.sendall(req)
            got, reads = b"", 0
            while not got.endswith(b'"Echo: hi"'):
                chunk = s.recv(65536)
                if not chunk:
                    raise RuntimeError("front closed the connection")
                reads += 1
                if reads == 1:
                    first.append(time.perf_counter() - t)
                got += chunk
            last.append(time.perf_counter() - t)
            whole += reads == 1
    return {"first_bytes": statistics.median(first), "last_byte": statistics.median(last),
            "one_read": whole, "n": n}


def run_latency(bin_path, configs, a_mcpo_config, tmp, env, calls, block):
    up = Up(bin_path, configs, os.path.join(tmp, "run-latency"), env)
    direct = None
    callers = []
    try:
        healthz = up.wait_ready()
        doc = up.doc
        if doc is None or doc.get("success") is not True or None in healthz:
            sys.exit(f"up failed: {json.dumps(doc)[:2000] if doc else None}\n{up.stderr_text()[-2000:]}")
        stack_a = next(s for s in doc["stacks"] if s["stack"] == up.stacks[0])
        rss_ready = proc_status(up.proc.pid)
        direct = Mcpo(a_mcpo_config, tmp, env)
        if direct.wait_ready() is None:
            sys.exit("the direct mcpo did not answer")
        front = Caller(up.front_base, {"X-API-Key": stack_a["api_key"]})
        bare = Caller(direct.port, {"Authorization": f"Bearer {direct.key}"})
        callers = [front, bare]
        for _ in range(200):  # warm both paths (connections, Python and Node JITs)
            front.call()
            bare.call()
        samples = {"front": [], "direct": []}
        blocks = max(1, calls // block)
        for b in range(blocks):
            order = (("front", front), ("direct", bare)) if b % 2 == 0 else (("direct", bare), ("front", front))
            for name, caller in order:
                out = samples[name]
                for _ in range(block):
                    out.append(caller.call())
        per_block = [statistics.median(samples["front"][i * block:(i + 1) * block])
                     - statistics.median(samples["direct"][i * block:(i + 1) * block])
                     for i in range(blocks)]
        rss_after = proc_status(up.proc.pid)
        mcpo_rss = {}
        for name, pid in up.controller_groups().items():
            kb, n = tree_rss(pid)
            mcpo_rss[name] = {"mcpo": proc_status(pid), "tree_kb": kb, "tree_procs": n}
        kb, n = tree_rss(direct.pgid)
        direct_rss = {"mcpo": proc_status(direct.pgid), "tree_kb": kb, "tree_procs": n}
        probe = arrival_probe(up.front_base, stack_a["api_key"], 50)
        return {
            "front": lat_stats(samples["front"]),
            "direct": lat_stats(samples["direct"]),
            "block_p50_diff_median": statistics.median(per_block),
            "block_p50_diff_min": min(per_block),
            "block_p50_diff_max": max(per_block),
            "blocks": blocks,
            "block": block,
            "reconnects": {"front": front.reconnects, "direct": bare.reconnects},
            "up_rss_ready_kb": rss_ready,
            "up_rss_after_kb": rss_after,
            "mcpo_rss": mcpo_rss,
            "direct_mcpo_rss": direct_rss,
            "arrival_probe": probe,
        }
    finally:
        for c in callers:
            c.close()
        left = direct.stop() if direct is not None else 0
        stopped = up.stop()
        if left or (stopped and (stopped[1] != 0 or stopped[2])):
            log(f"latency run: up exited {stopped[1]}, its leftovers {stopped[2]}; our mcpo's leftovers {left}")


# ---------------------------------------------------------------- report


def report(r):
    rounds, cold, lat = r["rounds"], r["cold"], r["latency"]
    out = []
    p = out.append
    p(machine.heading("Launch (`up`)"))
    p("")
    p(f"Binary: `{r['bin']}` (commit {r['commit']}). 2 stacks × 3 servers: "
      f"a = everything, time, memory ({r['operations']['a']} operations); "
      f"b = filesystem, git, everything ({r['operations']['b']} operations). "
      f"`up --tunnel none --json`, fresh working directory each run. "
      f"Rounds: {len(rounds)}; values are median (min–max) in ms.")
    p("")
    p("| time to up (from spawning `up`) | ms |")
    p("|---|---:|")
    p(f"| `ready_ms` reported in `up`'s JSON | {spread([x['ready_ms'] for x in rounds])} |")
    p(f"| JSON on stdout (wall) | {spread([ms(x['json_s']) for x in rounds])} |")
    p(f"| **both fronts' `/healthz` answer 200 (wall)** | **{spread([ms(x['healthz_s']) for x in rounds])}** |")
    p(f"| floor: bare mcpo, stack a's 3 servers, until `/openapi.json` answers | {spread([ms(x['bare_a']) for x in rounds])} |")
    p(f"| floor: both stacks' bare mcpos started at once, until both answer | {spread([ms(x['bare_ab']) for x in rounds])} |")
    p(f"| `up` minus both bare mcpos (paired per round) | {spread([ms(x['healthz_s'] - x['bare_ab']) for x in rounds])} |")
    p(f"| first `up` on an empty token cache (loads the tokenizer): `/healthz` | {ms(cold['healthz_s']):.0f} |")
    p(f"| stop: SIGTERM → `up` exited, every process gone | {spread([ms(x['stop_s']) for x in rounds])} |")
    ph = [x["phases"] for x in rounds if x["phases"]]
    if ph:
        steps = [
            ("process start, config load", lambda x, ph: ph["preflight_start"]),
            ("preflight: 6 handshakes in parallel", lambda x, ph: ph["preflight_end"] - ph["preflight_start"]),
            ("preflight done → mcpo spawned (token counts, tool index)", lambda x, ph: ph["mcpo_start"] - ph["preflight_end"]),
            ("mcpo: spawn → both answer `/openapi.json` (seen by `up`)", lambda x, ph: ph["mcpo_ready"] - ph["mcpo_start"]),
            ("per-server specs, merge, front serving", lambda x, ph: x["healthz_s"] - ph["mcpo_ready"]),
        ]
        p("")
        p(f"Where the time goes (from `up --log-file`, {len(ph)} of {len(rounds)} rounds parsed):")
        p("")
        p("| step | ms |")
        p("|---|---:|")
        for label, f in steps:
            p(f"| {label} | {spread([ms(f(x, x['phases'])) for x in rounds if x['phases']])} |")
    f, d = lat["front"], lat["direct"]
    p("")
    p(f"Proxy overhead: `POST /everything/echo {{\"message\":\"hi\"}}`, {f['n']} calls each, one kept-alive "
      f"connection per path, interleaved in {lat['blocks']} blocks of {lat['block']} (after 200 warm-up calls each).")
    p("")
    p("| path | p50 (ms) | p99 (ms) | mean (ms) | max (ms) |")
    p("|---|---:|---:|---:|---:|")
    p(f"| through the front (X-API-Key) → mcpo | {ms(f['p50']):.2f} | {ms(f['p99']):.2f} | {ms(f['mean']):.2f} | {ms(f['max']):.1f} |")
    p(f"| directly to a mcpo of our own (Bearer) | {ms(d['p50']):.2f} | {ms(d['p99']):.2f} | {ms(d['mean']):.2f} | {ms(d['max']):.1f} |")
    p(f"| **difference (front adds)** | **{ms(f['p50'] - d['p50']):.2f}** | {ms(f['p99'] - d['p99']):.2f} | {ms(f['mean'] - d['mean']):.2f} | |")
    p("")
    p(f"Per-block p50 difference: median {ms(lat['block_p50_diff_median']):.2f} ms "
      f"(min {ms(lat['block_p50_diff_min']):.2f}, max {ms(lat['block_p50_diff_max']):.2f}).")
    pr = lat["arrival_probe"]
    p(f"Raw-socket probe through the front ({pr['n']} kept-alive calls): first response bytes after "
      f"{ms(pr['first_bytes']):.2f} ms, last byte after {ms(pr['last_byte']):.2f} ms (medians); "
      f"{pr['one_read']} of {pr['n']} responses arrived in one read.")
    p("")
    mb = lambda kb: f"{kb / 1024:.1f}"  # noqa: E731
    p("| memory | VmRSS (MB) | VmHWM (MB) |")
    p("|---|---:|---:|")
    p(f"| `up` (2 stacks) right after ready, warm token cache | {mb(lat['up_rss_ready_kb']['VmRSS'])} | {mb(lat['up_rss_ready_kb']['VmHWM'])} |")
    if cold["rss_kb"]:
        p(f"| `up` right after ready, first run (empty token cache: loads the tokenizer) | {mb(cold['rss_kb']['VmRSS'])} | {mb(cold['rss_kb']['VmHWM'])} |")
    p(f"| **`up` while serving, after {f['n'] + 200} calls through its front** | **{mb(lat['up_rss_after_kb']['VmRSS'])}** | {mb(lat['up_rss_after_kb']['VmHWM'])} |")
    for name, m in lat["mcpo_rss"].items():
        if m["mcpo"]:
            p(f"| mcpo of stack {name} (with its {m['tree_procs'] - 1} servers: {mb(m['tree_kb'])} MB) | "
              f"{mb(m['mcpo']['VmRSS'])} | {mb(m['mcpo']['VmHWM'])} |")
    dm = lat["direct_mcpo_rss"]
    if dm["mcpo"]:
        p(f"| our direct mcpo (with its {dm['tree_procs'] - 1} servers: {mb(dm['tree_kb'])} MB) | "
          f"{mb(dm['mcpo']['VmRSS'])} | {mb(dm['mcpo']['VmHWM'])} |")
    notes = []
    codes = sorted({x["exit_code"] for x in rounds + [cold]})
    if codes != [0]:
        notes.append(f"`up` exit codes after SIGTERM: {codes}")
    left = sum(x["leftovers"] for x in rounds + [cold])
    if left:
        notes.append(f"{left} processes of `up`'s tree outlived it (ended here)")
    left = sum(x["bare_leftovers"] for x in rounds)
    if left:
        notes.append(f"{left} processes of the bare mcpos outlived their group's stop (ended here)")
    errs = [x["stderr"] for x in rounds + [cold] if x["stderr"]]
    if errs:
        notes.append(f"`up` wrote to stderr in {len(errs)} runs, e.g.: {errs[0][:300]!r}")
    recon = lat["reconnects"]
    if recon["front"] or recon["direct"]:
        notes.append(f"kept-alive connections closed by the server and reopened (the call then retried and "
                     f"timed on the new connection): front {recon['front']}, direct {recon['direct']}")
    if notes:
        p("")
        for n in notes:
            p(f"- {n}")
    return "\n".join(out)


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser()
    add_run_options(ap, 3000, "echo calls per path")
    ap.add_argument("--block", type=int, default=100, help="calls per interleaved block")
    a = parse_run_args(ap, report)
    if a is None:
        return
    tmp, bin_copy, commit = prepare_run(a.bin, "mcpl-bench-launch-")

    stacks = stack_servers(tmp)
    configs = [write_json(os.path.join(tmp, f"{name}.json"), {"mcpServers": servers})
               for name, servers in stacks.items()]
    bare_configs = [write_json(os.path.join(tmp, f"mcpo-{name}.json"),
                               mcpo_config(servers, os.path.join(tmp, f"memory-bare-{name}.jsonl")))
                    for name, servers in stacks.items()]
    env = bench_env(tmp)

    result = None
    try:
        log("first up on an empty token cache…")
        # Without --log-file, so its RSS is comparable with the latency run's.
        cold = run_up_round(bin_copy, configs, os.path.join(tmp, "run-cold"), env, with_log=False)
        rounds = []
        for i in range(a.rounds):
            # Paired: `up` and the bare mcpos back to back, so drift of this VM hits all three.
            x = run_up_round(bin_copy, configs, os.path.join(tmp, f"run-{i}"), env)
            x["bare_a"], left_a = run_bare(bare_configs[:1], tmp, env)
            x["bare_ab"], left_ab = run_bare(bare_configs, tmp, env)
            x["bare_leftovers"] = left_a + left_ab
            rounds.append(x)
            log(f"round {i + 1}/{a.rounds}: ready_ms {x['ready_ms']}, healthz {ms(x['healthz_s']):.0f} ms, "
                f"bare mcpo a {ms(x['bare_a']):.0f} ms, a+b {ms(x['bare_ab']):.0f} ms")
        log(f"latency: {a.calls} echo calls per path…")
        lat = run_latency(bin_copy, configs, bare_configs[0], tmp, env, a.calls, a.block)
        result = {"bin": os.path.relpath(a.bin, ROOT), "commit": commit, "operations": cold["operations"],
                  "cold": cold, "rounds": rounds, "latency": lat}
    finally:
        finish(tmp, a.keep, result, a.json, report)


if __name__ == "__main__":
    main()
