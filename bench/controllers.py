#!/usr/bin/env python3
"""Side-by-side benchmark of the two controllers of `mcp-launch up`: mcpo (the Python bridge, a
process of its own) and native (our bridge inside the `up` process).

One stack `a` = mcp-server-everything + mcp-server-time (the real servers installed by
scripts/install-test-deps.sh), `up --config a.json --tunnel none --json --controller C`, each
`up` in a fresh working directory. The caches are isolated: XDG_CACHE_HOME is a directory of
this run, warmed once by `mcp-launch list --config a.json` (tool index and token counts).
Rounds are interleaved: mcpo, native, native-cold, raw, mcpo, native, ...

1. Time to ready, from spawning `up`, two pollers started at once (10 ms between tries, a
   request may wait up to 30 s for its answer, so a front that holds requests is timed when
   it answers):
   (a) GET /openapi.json with X-API-Key answers 200 with the /everything/echo operation;
   (b) POST /everything/echo {"message":"hi"} answers 200 with "Echo: hi".
   Every other answer before the 200 is counted by status (connection refused, 503, ...).
   With the native controller, a third poller reads `.mcp-launch/state.json` until every
   server of the bridge is `up` (it may start them in the background after serving).
   Variants: `mcpo`; `native` (warm tool index); `native-cold` (MCP_LAUNCH_INDEX_TTL=0: the
   index is not used).
2. Latency of echo through the front over kept-alive HTTP (mcpo and native; native-cold is the
   same bridge once ready, so it is not run), once every server is up (so none is still
   starting in the background): 200 warm-up calls, then --calls sequential calls
   on one connection (c=1); then 16 threads, each with its own kept-alive http.client
   connection, 20 warm-up calls each, then --calls calls in all started together (c=16):
   p50/p99/mean and throughput (calls / wall time of the c=16 run). The floor: a raw MCP
   stdio client (this script, no HTTP) spawns mcp-server-everything, does the handshake and
   times --calls sequential tools/call echo after 200 warm-up calls. "Added" = the
   controller's c=1 p50 minus the raw p50 of the same round.
3. RSS (VmRSS from /proc), after the latency runs: mcpo = the mcpo process (the bridge), its
   tree (with the servers) for context; native = the `up` process; the native bridge's own
   cost = `up` native minus `up` mcpo (which only runs the front and supervises), same round.
   Servers (the children) for context.

Every process started here is stopped at the end, also on errors and Ctrl-C: `up` by one
SIGTERM, then its tree and every process group it recorded or ran are checked to be gone
(leftovers are ended and counted); the raw client's server by its process group.

Usage: python3 bench/controllers.py [--rounds 5] [--calls 2000] [--bin target/release/mcp-launch]
       [--json] [--keep] [--render FILE]
Prints a markdown report on stdout (--json: the raw figures as JSON instead; --render FILE:
the report of such a file).
"""
import argparse
import collections
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402
from common import (  # noqa: E402
    DEPS, ECHO_BODY, NPM_BIN, ROOT, UP_TIMEOUT, Caller, StdioSession, Up, add_run_options, bench_env,
    descendants, everything_bin, finish, lat_stats, log, ms, parse_run_args, prepare_run,
    proc_status, spread, stack_config, tree_rss, write_json)

VARIANTS = ("mcpo", "native", "native-cold")
CONTROLLER = {"mcpo": "mcpo", "native": "native", "native-cold": "native"}
VARIANT_ENV = {"mcpo": {}, "native": {}, "native-cold": {"MCP_LAUNCH_INDEX_TTL": "0"}}
TIMED = ("mcpo", "native")  # the variants whose latency and RSS are measured
CONCURRENCY = 16
WARM_C1 = 200
WARM_EACH = 20
POLL_INTERVAL = 0.01
POLL_TIMEOUT = 30.0
ECHO_CALL = {"name": "echo", "arguments": {"message": "hi"}}

# Set when the run ends or fails: every poller stops at once.
ABORT = threading.Event()


class BenchError(Exception):
    pass


def warm_index(bin_path, cfg, env, workdir):
    """`mcp-launch list --config a.json` once (fills the tool index and the token counts),
    then again to check that the index now answers for every server."""
    os.makedirs(workdir)
    out = {}
    for step in ("warm", "check"):
        t = time.perf_counter()
        r = subprocess.run([bin_path, "list", "--config", cfg, "--json"], cwd=workdir, env=env,
                           capture_output=True, text=True, timeout=UP_TIMEOUT)
        took = time.perf_counter() - t
        try:
            servers = json.loads(r.stdout)["servers"]
        except (ValueError, KeyError, TypeError):
            raise BenchError(f"list --json printed no servers: {r.stdout[:500]!r} {r.stderr[-500:]!r}")
        out[step] = {"s": took, "status": {s["name"]: s["status"] for s in servers}}
    if any(v != "cached" for v in out["check"]["status"].values()):
        raise BenchError(f"the tool index does not answer after warming: {out}")
    return out


# ---------------------------------------------------------------- time to ready


def poll_until_ok(port, method, path, body, headers, accept, t0, deadline, give_up):
    """Tries the request every POLL_INTERVAL (a new connection each time) until `accept(status,
    body)`; returns {s: seconds since t0 or None, first_answer_s, before: {outcome: count},
    samples: {status: first body}}."""
    before = collections.Counter()
    samples = {}
    first_answer = None
    while time.perf_counter() < deadline and not give_up.is_set() and not ABORT.is_set():
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=POLL_TIMEOUT)
        try:
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
            now = time.perf_counter() - t0
            if first_answer is None:
                first_answer = now
            if accept(r.status, data):
                return {"s": now, "first_answer_s": first_answer, "before": dict(before), "samples": samples}
            outcome = f"{r.status}" if r.status != 200 else "200 without the expected body"
            before[outcome] += 1
            samples.setdefault(outcome, data[:300].decode(errors="replace"))
        except ConnectionRefusedError:
            before["connection refused"] += 1
        except socket.timeout:
            before[f"no answer within {POLL_TIMEOUT:.0f} s"] += 1
        except (OSError, http.client.HTTPException) as e:
            before[type(e).__name__] += 1
        finally:
            conn.close()
        time.sleep(POLL_INTERVAL)
    return {"s": None, "first_answer_s": first_answer, "before": dict(before), "samples": samples}


def poll_bridge_servers(up, deadline, give_up):
    """Seconds since spawning `up` until its state file shows every native bridge server
    `up`, or None."""
    while time.perf_counter() < deadline and not give_up.is_set() and not ABORT.is_set():
        try:
            servers = up.state()["stacks"][0].get("bridge_servers", [])
            if servers and all(b.get("state") == "up" for b in servers):
                return time.perf_counter() - up.t0
        except (OSError, ValueError, KeyError, IndexError):
            pass
        time.sleep(POLL_INTERVAL)
    return None


def measure_ready(up, key, native):
    """Polls (a) /openapi.json and (b) echo from the moment `up` was spawned; with the native
    controller also the state file until every server is up (the latency runs wait for it, so
    no server is still starting in the background while they run)."""
    deadline = up.t0 + UP_TIMEOUT
    exited = threading.Event()
    results = {}
    auth = {"X-API-Key": key}
    checks = {
        "openapi": ("GET", "/openapi.json", None, auth,
                    lambda st, d: st == 200 and b'"/everything/echo"' in d),
        "echo": ("POST", "/everything/echo", ECHO_BODY, dict(auth, **{"Content-Type": "application/json"}),
                 lambda st, d: st == 200 and b"Echo: hi" in d),
    }

    def poll(name):
        method, path, body, headers, accept = checks[name]
        results[name] = poll_until_ok(up.front_base, method, path, body, headers, accept,
                                      up.t0, deadline, exited)

    threads = [threading.Thread(target=poll, args=(n,)) for n in checks]
    if native:
        def servers():
            results["servers_up_s"] = poll_bridge_servers(up, deadline, exited)
        threads.append(threading.Thread(target=servers))
    for t in threads:
        t.start()
    try:
        while any(t.is_alive() for t in threads):
            if up.proc.poll() is not None:  # `up` failed: it prints its JSON and ends
                exited.set()
                break
            time.sleep(0.05)
    finally:
        exited.set()  # on Ctrl-C too: the pollers stop, `up` is stopped by the caller
        for t in threads:
            t.join()
    end = time.perf_counter() + 5
    while up.doc is None and time.perf_counter() < end and up.proc.poll() is None:
        time.sleep(0.01)
    return results


# ---------------------------------------------------------------- latency


def timed_call(caller, errors):
    """One echo; its seconds, or None (counted in `errors`) when it did not answer 200."""
    try:
        return caller.call()
    except RuntimeError as e:
        errors[str(e)[:200]] += 1
        return None


def calls_c1(port, key, calls, errors):
    caller = Caller(port, {"X-API-Key": key})
    try:
        for _ in range(WARM_C1):
            timed_call(caller, errors)
        samples = [timed_call(caller, errors) for _ in range(calls)]
        return [s for s in samples if s is not None], caller.reconnects
    finally:
        caller.close()


def calls_concurrent(port, key, calls, errors):
    """CONCURRENCY threads, each on its own kept-alive connection, released together after
    their warm-up; returns (samples, wall seconds from release to the last answer, reconnects)."""
    callers = [Caller(port, {"X-API-Key": key}) for _ in range(CONCURRENCY)]
    share = [calls // CONCURRENCY + (i < calls % CONCURRENCY) for i in range(CONCURRENCY)]
    samples = [[] for _ in range(CONCURRENCY)]
    failures = []
    lock = threading.Lock()
    start = threading.Barrier(CONCURRENCY + 1)

    def work(i):
        local = collections.Counter()
        try:
            for _ in range(WARM_EACH):
                timed_call(callers[i], local)
            start.wait()
            for _ in range(share[i]):
                s = timed_call(callers[i], local)
                if s is not None:
                    samples[i].append(s)
        except threading.BrokenBarrierError:
            pass
        except Exception as e:  # noqa: BLE001 - reported after the join
            failures.append(e)
            start.abort()
        finally:
            with lock:
                errors.update(local)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(CONCURRENCY)]
    try:
        for t in threads:
            t.start()
        try:
            start.wait()
        except threading.BrokenBarrierError:
            pass
        t0 = time.perf_counter()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t0
    finally:
        start.abort()  # on Ctrl-C: no thread stays waiting for the release
        for c in callers:
            c.close()
    if failures:
        raise BenchError(f"c={CONCURRENCY} caller failed: {failures[0]!r}")
    return [s for per in samples for s in per], wall, sum(c.reconnects for c in callers)


def latency(port, key, calls):
    errors = collections.Counter()
    c1, reconnects1 = calls_c1(port, key, calls, errors)
    cN, wall, reconnectsN = calls_concurrent(port, key, calls, errors)
    if not c1 or not cN:
        raise BenchError(f"no echo answered 200: {dict(errors)}")
    return {"c1": lat_stats(c1), "cN": lat_stats(cN), "cN_wall_s": wall,
            "throughput": len(cN) / wall, "errors": dict(errors),
            "reconnects": reconnects1 + reconnectsN}


def raw_baseline(calls, env):
    """The floor: our minimal stdio client straight to mcp-server-everything."""
    session = StdioSession([everything_bin()], env=env)
    try:
        def one():
            t = time.perf_counter()
            msg = session.request("tools/call", ECHO_CALL)
            dt = time.perf_counter() - t
            if "Echo: hi" not in json.dumps(msg.get("result")):
                raise BenchError(f"raw echo answered {msg}")
            return dt
        for _ in range(WARM_C1):
            one()
        samples = [one() for _ in range(calls)]
    finally:
        leftovers = session.close()
    return {"c1": lat_stats(samples), "leftovers": leftovers}


# ---------------------------------------------------------------- RSS


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return "?"


def rss_kb(pid):
    st = proc_status(pid)
    return st["VmRSS"] if st else None


def pgid_of(pid):
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def memory(up):
    """VmRSS (kB) of `up`, of the bridge and of the servers, after the latency runs."""
    up_kb = rss_kb(up.proc.pid)
    out = {"up_kb": up_kb, "up_hwm_kb": (proc_status(up.proc.pid) or {}).get("VmHWM")}
    controller = up.state()["stacks"][0].get("controller_process")
    if controller:  # mcpo: the bridge is a process of its own (it leads its group)
        mcpo_pid = controller["pgid"]
        mcpo_kb = rss_kb(mcpo_pid)
        tree_kb, n = tree_rss(mcpo_pid)
        group = [p for p, _ in [(mcpo_pid, None)] + descendants(mcpo_pid) if pgid_of(p) == mcpo_pid]
        out.update(mcpo_kb=mcpo_kb, mcpo_tree_kb=tree_kb, servers_kb=tree_kb - (mcpo_kb or 0),
                   servers=n - 1, mcpo_group_kb=sum(rss_kb(p) or 0 for p in group),
                   mcpo_group_procs=len(group))
    else:  # native: the servers are `up`'s children
        kids = descendants(up.proc.pid)
        out.update(servers_kb=sum(rss_kb(p) or 0 for p, _ in kids), servers=len(kids))
    out["up_tree_kb"], _ = tree_rss(up.proc.pid)
    out["processes"] = sorted(comm(p) for p, _ in descendants(up.proc.pid))
    return out


# ---------------------------------------------------------------- one run


def shown_command(up, bin_copy, cfg, key):
    words = []
    for w in up.args:
        w = {bin_copy: "mcp-launch", cfg: "a.json", key: "<key>",
             str(up.front_base): "<P>", str(up.mcpo_base): "<Q>"}.get(w, w)
        words.append(w)
    return " ".join(words)


def run_variant(variant, workdir, bin_copy, cfg, env, calls, live):
    key = "bench-" + os.urandom(16).hex()
    venv = dict(env, **VARIANT_ENV[variant])
    up = Up(bin_copy, [cfg], workdir, venv,
            extra_args=["--controller", CONTROLLER[variant], "--api-key", key])
    live.append(up)
    out = {"variant": variant, "command": shown_command(up, bin_copy, cfg, key)}
    try:
        ready = measure_ready(up, key, CONTROLLER[variant] == "native")
        out["openapi"], out["echo"] = ready["openapi"], ready["echo"]
        out["servers_up_s"] = ready.get("servers_up_s")
        doc = up.doc or {}
        out["ready_ms"] = doc.get("ready_ms")
        out["json_s"] = up.json_at
        out["up_success"] = doc.get("success")
        out["controller"] = next((s.get("controller") for s in doc.get("stacks", [])), None)
        if out["openapi"]["s"] is None or out["echo"]["s"] is None or \
                (CONTROLLER[variant] == "native" and out["servers_up_s"] is None):
            out["failed"] = (f"not ready within {UP_TIMEOUT:.0f} s (up exit {up.proc.poll()}); "
                             f"json={json.dumps(doc)[:800]} stderr={up.stderr_text()[-800:]!r}")
        elif variant in TIMED:
            out["latency"] = latency(up.front_base, key, calls)
            out["memory"] = memory(up)
            try:
                stack = up.state()["stacks"][0]
                out["state_controller"] = stack["controller"]
                out["bridge_servers"] = [{k: b.get(k) for k in ("name", "state", "restarts", "last_error")}
                                         for b in stack.get("bridge_servers", [])]
                out["bridge_servers_at_s"] = time.perf_counter() - up.t0
            except (OSError, ValueError, KeyError, IndexError):
                out["state_controller"] = None
    finally:
        took, code, left = up.stop()
        out.update(stop_s=took, exit_code=code, leftovers=left, groups_left=up.groups_left,
                   stderr=up.stderr_text().strip()[-2000:])
    return out


# ---------------------------------------------------------------- report


def values(rounds, variant, f):
    out = []
    for r in rounds:
        x = r.get(variant)
        if x is None:
            continue
        try:
            v = f(x, r)
        except (KeyError, TypeError):
            continue
        if v is not None:
            out.append(v)
    return out


def med(vs):
    return statistics.median(vs) if vs else None


def cell(vs, fmt="{:.0f}"):
    return spread(vs, fmt) if vs else "n/a"


def ratio(a, b):
    if a is None or b is None or b <= 0 or a < 0:
        return "n/a"
    return f"{a / b:.2f} ×"


FIGURES = {
    "ready_a": lambda x, r: ms(x["openapi"]["s"]),
    "ready_b": lambda x, r: ms(x["echo"]["s"]),
    "b_minus_a": lambda x, r: ms(x["echo"]["s"] - x["openapi"]["s"]),
    "first_answer": lambda x, r: ms(x["echo"]["first_answer_s"]),
    "servers_up": lambda x, r: ms(x["servers_up_s"]),
    "ready_ms": lambda x, r: x["ready_ms"],
    "c1_p50": lambda x, r: ms(x["latency"]["c1"]["p50"]),
    "c1_p99": lambda x, r: ms(x["latency"]["c1"]["p99"]),
    "c1_mean": lambda x, r: ms(x["latency"]["c1"]["mean"]),
    "added_p50": lambda x, r: ms(x["latency"]["c1"]["p50"] - r["raw"]["c1"]["p50"]),
    "cN_p50": lambda x, r: ms(x["latency"]["cN"]["p50"]),
    "cN_p99": lambda x, r: ms(x["latency"]["cN"]["p99"]),
    "cN_mean": lambda x, r: ms(x["latency"]["cN"]["mean"]),
    "throughput": lambda x, r: x["latency"]["throughput"],
    "up_mb": lambda x, r: x["memory"]["up_kb"] / 1024,
    "servers_mb": lambda x, r: x["memory"]["servers_kb"] / 1024,
    "mcpo_mb": lambda x, r: x["memory"]["mcpo_kb"] / 1024,
    "mcpo_tree_mb": lambda x, r: x["memory"]["mcpo_tree_kb"] / 1024,
    "mcpo_group_mb": lambda x, r: x["memory"]["mcpo_group_kb"] / 1024,
    "up_tree_mb": lambda x, r: x["memory"]["up_tree_kb"] / 1024,
    # The native bridge's own cost: `up` native minus `up` mcpo (front and supervision only).
    "native_bridge_mb": lambda x, r: (x["memory"]["up_kb"] - r["mcpo"]["memory"]["up_kb"]) / 1024,
}


def fig(rounds, variant, name):
    return values(rounds, variant, FIGURES[name])


def report(r):
    rounds = r["rounds"]
    out = []
    p = out.append
    p(machine.heading("Controllers: mcpo vs native"))
    p("")
    p(f"Binary: `{r['bin']}` (commit {r['commit']}). One stack `a` = mcp-server-everything + "
      f"mcp-server-time, `up --tunnel none --json`, a fresh working directory each run. "
      f"Rounds: {len(rounds)}, interleaved ({', '.join(r['order'])}); {r['calls']} echo calls per "
      f"latency run. Values are median (min–max) over rounds.")
    p("")
    p("Commands (`XDG_CACHE_HOME` = a directory of this run for all of them; `<P>`/`<Q>`: free ports):")
    p("")
    p("```sh")
    p(f"python3 bench/controllers.py --rounds {r['rounds_asked']} --calls {r['calls']}")
    p("mcp-launch list --config a.json --json      # once before the rounds: warms the tool index and token counts")
    for v in VARIANTS:
        cmd = next((x[v]["command"] for x in rounds if v in x), None)
        if cmd:
            env = " ".join(f"{k}={val}" for k, val in VARIANT_ENV[v].items())
            p(f"{env + ' ' if env else ''}{cmd}   # {v}")
    p("```")
    p("")
    p("`a.json`: `{\"mcpServers\": {\"everything\": {\"command\": \".deps/npm/node_modules/.bin/"
      "mcp-server-everything\"}, \"time\": {\"command\": \".deps/venv-time/bin/mcp-server-time\"}}}`.")
    w = r["warm"]
    p(f"Warm-up `list`: {ms(w['warm']['s']):.0f} ms ({w['warm']['status']}), then "
      f"{ms(w['check']['s']):.0f} ms from the index ({w['check']['status']}).")

    p("")
    p("Time to ready, from spawning `up` (ms); (a) and (b) polled at once from the start (every "
      f"{POLL_INTERVAL * 1000:.0f} ms, a request may wait {POLL_TIMEOUT:.0f} s for its answer). `native`: "
      "warm tool index; `native-cold`: `MCP_LAUNCH_INDEX_TTL=0` (the index is not used); the latency "
      "and memory figures below are of `mcpo` and `native` (once every server is up), not of "
      "`native-cold`, which is the same bridge once ready.")
    p("")
    p("| variant | (a) `/openapi.json` 200 | (b) first echo 200 | (b) − (a) | first HTTP answer to an echo | "
      "every server `up` in the state file (native) | `ready_ms` in `up`'s JSON | answers before (b), all rounds |")
    p("|---|---:|---:|---:|---:|---:|---:|---|")
    for v in VARIANTS:
        before = collections.Counter()
        for x in rounds:
            if v in x:
                before.update(x[v]["echo"]["before"])
        shown = ", ".join(f"{k}: {n}" for k, n in sorted(before.items())) or "none"
        p(f"| {v} | {cell(fig(rounds, v, 'ready_a'))} | {cell(fig(rounds, v, 'ready_b'))} | "
          f"{cell(fig(rounds, v, 'b_minus_a'))} | {cell(fig(rounds, v, 'first_answer'))} | "
          f"{cell(fig(rounds, v, 'servers_up')) if CONTROLLER[v] == 'native' else '—'} | "
          f"{cell(fig(rounds, v, 'ready_ms'))} | {shown} |")

    p("")
    p(f"Latency of `POST /everything/echo {{\"message\":\"hi\"}}` through the front (X-API-Key), kept-alive "
      f"`http.client` connections (ms). c=1: one connection, {WARM_C1} warm-up calls then {r['calls']}; "
      f"c={CONCURRENCY}: {CONCURRENCY} threads with a connection each, {WARM_EACH} warm-up calls each, "
      f"then {r['calls']} calls in all. Raw: this script's MCP stdio client straight to "
      f"mcp-server-everything (no HTTP), {WARM_C1} warm-up calls then {r['calls']} sequential.")
    p("")
    p(f"| path | c=1 p50 | c=1 p99 | c=1 mean | added p50 (c=1 − raw, per round) | c={CONCURRENCY} p50 | "
      f"c={CONCURRENCY} p99 | c={CONCURRENCY} mean | throughput c={CONCURRENCY} (calls/s) |")
    p("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    f2 = "{:.2f}"
    raw = lambda k: [ms(x["raw"]["c1"][k]) for x in rounds if "raw" in x]  # noqa: E731
    p(f"| raw stdio client → server | {cell(raw('p50'), f2)} | {cell(raw('p99'), f2)} | "
      f"{cell(raw('mean'), f2)} | — | | | | |")
    for v in TIMED:
        p(f"| front → {v} | {cell(fig(rounds, v, 'c1_p50'), f2)} | {cell(fig(rounds, v, 'c1_p99'), f2)} | "
          f"{cell(fig(rounds, v, 'c1_mean'), f2)} | **{cell(fig(rounds, v, 'added_p50'), f2)}** | "
          f"{cell(fig(rounds, v, 'cN_p50'), f2)} | {cell(fig(rounds, v, 'cN_p99'), f2)} | "
          f"{cell(fig(rounds, v, 'cN_mean'), f2)} | {cell(fig(rounds, v, 'throughput'))} |")

    p("")
    p("Memory after the latency runs, VmRSS (MB):")
    p("")
    p("| | mcpo | native |")
    p("|---|---:|---:|")
    f1 = "{:.1f}"
    p(f"| **the bridge itself** (mcpo: the mcpo process; native: `up` native − `up` mcpo, same round) | "
      f"**{cell(fig(rounds, 'mcpo', 'mcpo_mb'), f1)}** | **{cell(fig(rounds, 'native', 'native_bridge_mb'), f1)}** |")
    p(f"| `up` process | {cell(fig(rounds, 'mcpo', 'up_mb'), f1)} | {cell(fig(rounds, 'native', 'up_mb'), f1)} |")
    nserv = {v: sorted({x[v]["memory"]["servers"] for x in rounds if "memory" in x.get(v, {})}) for v in TIMED}
    p(f"| servers (children; {nserv['mcpo']} / {nserv['native']} processes) | "
      f"{cell(fig(rounds, 'mcpo', 'servers_mb'), f1)} | {cell(fig(rounds, 'native', 'servers_mb'), f1)} |")
    p(f"| mcpo with its servers (its process tree) | {cell(fig(rounds, 'mcpo', 'mcpo_tree_mb'), f1)} | — |")
    ngroup = sorted({x["mcpo"]["memory"]["mcpo_group_procs"] for x in rounds if "memory" in x.get("mcpo", {})})
    p(f"| mcpo's process group ({ngroup} processes: its servers run in sessions of their own, so "
      f"they are counted by tree) | {cell(fig(rounds, 'mcpo', 'mcpo_group_mb'), f1)} | — |")
    p(f"| everything: `up` and its whole tree | {cell(fig(rounds, 'mcpo', 'up_tree_mb'), f1)} | "
      f"{cell(fig(rounds, 'native', 'up_tree_mb'), f1)} |")
    procs = {v: next((x[v]["memory"]["processes"] for x in rounds if "memory" in x.get(v, {})), []) for v in TIMED}
    p("")
    p(f"Processes under `up`: mcpo {procs['mcpo']}; native {procs['native']}.")

    p("")
    p("Ratios, mcpo / native (medians over rounds; > 1: mcpo is larger — slower, heavier — except "
      "throughput, where > 1 means mcpo serves more):")
    p("")
    p("| figure | mcpo | native | ratio mcpo / native |")
    p("|---|---:|---:|---:|")
    rows = [
        ("ready (a): `/openapi.json` 200 (ms)", "ready_a", "ready_a", "{:.0f}"),
        ("ready (b): first echo 200 (ms)", "ready_b", "ready_b", "{:.0f}"),
        ("bridge RSS (MB)", "mcpo_mb", "native_bridge_mb", "{:.1f}"),
        ("added p50 at c=1 (ms)", "added_p50", "added_p50", "{:.2f}"),
        (f"p50 at c={CONCURRENCY} (ms)", "cN_p50", "cN_p50", "{:.2f}"),
        (f"p99 at c={CONCURRENCY} (ms)", "cN_p99", "cN_p99", "{:.2f}"),
        (f"throughput at c={CONCURRENCY} (calls/s)", "throughput", "throughput", "{:.0f}"),
    ]
    for label, fm, fn, fmt in rows:
        a, b = med(fig(rounds, "mcpo", fm)), med(fig(rounds, "native", fn))
        show = lambda v: fmt.format(v) if v is not None else "n/a"  # noqa: E731
        p(f"| {label} | {show(a)} | {show(b)} | **{ratio(a, b)}** |")
    for label, name in (("ready (a)", "ready_a"), ("ready (b)", "ready_b")):
        a, b = med(fig(rounds, "mcpo", name)), med(fig(rounds, "native-cold", name))
        p(f"| {label}, against native-cold | {'n/a' if a is None else f'{a:.0f}'} | "
          f"{'n/a' if b is None else f'{b:.0f}'} (cold) | {ratio(a, b)} |")

    p("")
    p("Per round (ms; a / b):")
    p("")
    for i, x in enumerate(rounds):
        parts = []
        for v in VARIANTS:
            if v in x:
                a_s, b_s = x[v]["openapi"]["s"], x[v]["echo"]["s"]
                parts.append(f"{v} {'–' if a_s is None else f'{ms(a_s):.0f}'} / {'–' if b_s is None else f'{ms(b_s):.0f}'}")
        p(f"- round {i + 1}: " + "; ".join(parts))

    notes = []
    runs = [x[v] for x in rounds for v in VARIANTS if v in x]
    failed = [(x["variant"], x["failed"]) for x in runs if x.get("failed")]
    if failed:
        notes.append(f"{len(failed)} runs never got ready, e.g. {failed[0][0]}: {failed[0][1][:400]}")
    codes = sorted({x["exit_code"] for x in runs})
    if codes != [0]:
        notes.append(f"`up` exit codes after SIGTERM: {codes}")
    notes.append(f"SIGTERM → `up` exited: " + "; ".join(
        f"{v} {cell([ms(x[v]['stop_s']) for x in rounds if v in x])} ms" for v in VARIANTS))
    left = sum(x["leftovers"] for x in runs)
    groups = sum(x["groups_left"] for x in runs)
    raw_left = sum(x["raw"]["leftovers"] for x in rounds if "raw" in x)
    notes.append(f"processes left after `up` exited (ended here): {left} (of which process groups "
                 f"still alive: {groups}); raw client leftovers: {raw_left}")
    for v in TIMED:
        errs = collections.Counter()
        for x in rounds:
            if "latency" in x.get(v, {}):
                errs.update(x[v]["latency"]["errors"])
        if errs:
            notes.append(f"{v}: echo calls that did not answer 200 during the latency runs: {dict(errs)}")
        rec = sum(x[v]["latency"]["reconnects"] for x in rounds if "latency" in x.get(v, {}))
        if rec:
            notes.append(f"{v}: kept-alive connections closed by the server and reopened: {rec}")
    for v in VARIANTS:
        samples = {}
        for x in rounds:
            if v in x:
                for k, body in x[v]["echo"]["samples"].items():
                    samples.setdefault(k, body)
        if samples:
            notes.append(f"{v}: first body of each non-200 echo answer before ready: "
                         + "; ".join(f"{k}: {b[:200]!r}" for k, b in samples.items()))
    errs = [(x["variant"], x["stderr"]) for x in runs if x["stderr"]]
    if errs:
        notes.append(f"`up` wrote to stderr in {len(errs)} runs, e.g. {errs[0][0]}: {errs[0][1][:300]!r}")
    unwell = [(x["variant"], round(x["bridge_servers_at_s"], 1), b) for x in runs
              for b in x.get("bridge_servers", []) if b["state"] != "up" or b["restarts"] or b["last_error"]]
    if unwell:
        notes.append(f"native bridge servers as the state file showed them after the latency runs "
                     f"(variant, seconds since spawn, server), where not cleanly up: {unwell[:3]}")
    mismatched = [x["variant"] for x in runs if x.get("controller") not in (None, CONTROLLER[x["variant"]])]
    if mismatched:
        notes.append(f"`up` reported another controller than asked in: {mismatched}")
    notes.append(f"the client is this Python script: at c={CONCURRENCY} its 16 threads share one GIL and "
                 f"the machine's {os.cpu_count()} cores with `up`, the bridge and the servers, so "
                 f"the c={CONCURRENCY} figures include client-side queuing (the same for both controllers)")
    out += [""] + [f"- {n}" for n in notes]
    return "\n".join(out)


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser()
    add_run_options(ap, 2000, "echo calls per latency run (c=1, c=16 in all, raw)")
    a = parse_run_args(ap, report)
    if a is None:
        return
    tmp, bin_copy, commit = prepare_run(a.bin, "mcpl-bench-controllers-")
    cfg = write_json(os.path.join(tmp, "a.json"), stack_config())
    env = bench_env(tmp)
    env.pop("MCP_LAUNCH_INDEX_TTL", None)
    live = []
    result = None
    rounds = []
    order = list(VARIANTS) + ["raw"]
    try:
        log("warming the tool index: mcp-launch list --config a.json…")
        warm = warm_index(bin_copy, cfg, env, os.path.join(tmp, "run-warm"))
        for i in range(a.rounds):
            x = {}
            for v in VARIANTS:
                x[v] = run_variant(v, os.path.join(tmp, f"run-{i}-{v}"), bin_copy, cfg, env, a.calls, live)
                if x[v].get("failed"):
                    log(f"round {i + 1} {v}: {x[v]['failed'][:300]}")
            x["raw"] = raw_baseline(a.calls, env)
            rounds.append(x)
            line = []
            for v in VARIANTS:
                y = x[v]
                a_s, b_s = y["openapi"]["s"], y["echo"]["s"]
                s = f"{v} a {'–' if a_s is None else f'{ms(a_s):.0f}'} b {'–' if b_s is None else f'{ms(b_s):.0f}'} ms"
                if "latency" in y:
                    s += f", c1 p50 {ms(y['latency']['c1']['p50']):.2f}, c16 {y['latency']['throughput']:.0f}/s"
                line.append(s)
            log(f"round {i + 1}/{a.rounds}: " + "; ".join(line)
                + f"; raw p50 {ms(x['raw']['c1']['p50']):.2f} ms")
        result = {"bin": os.path.relpath(a.bin, ROOT), "commit": commit, "calls": a.calls,
                  "rounds_asked": a.rounds, "order": order, "warm": warm, "rounds": rounds}
    except BenchError as e:
        log(f"benchmark failed: {e}")
        sys.exit(1)
    finally:
        ABORT.set()
        for up in live:
            if not up.stopped:
                took, code, left = up.stop()
                log(f"stopped a running up (exit {code}, {left} leftovers ended)")
        finish(tmp, a.keep, result, a.json, report)


if __name__ == "__main__":
    main()
