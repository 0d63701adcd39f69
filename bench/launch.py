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
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPS = os.path.join(ROOT, ".deps")
NPM_BIN = os.path.join(DEPS, "npm", "node_modules", ".bin")
MCPO = os.path.join(DEPS, "venv-mcpo", "bin", "mcpo")
UP_TIMEOUT = 120.0
ECHO_BODY = b'{"message":"hi"}'


def log(msg):
    print(msg, file=sys.stderr, flush=True)


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


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=1)
    return path


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


def port_free(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_HANDED_OUT = set()


def free_ports(n):
    """A base port P with P..P+n-1 all free (for --port / --mcpo-port, stack i gets P+i);
    never the same port twice in one run, so two processes starting at once cannot collide."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        wanted = range(base, base + n)
        if base + n < 65536 and not _HANDED_OUT.intersection(wanted) and all(port_free(q) for q in wanted):
            _HANDED_OUT.update(wanted)
            return base
    raise RuntimeError("no free port range")


# ---------------------------------------------------------------- /proc


def proc_status(pid):
    """{VmRSS, VmHWM} in kB, or None when the process is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(":", 1)[0]
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(line.split()[1])
    except OSError:
        return None
    return out


def proc_stat(pid):
    """(ppid, start time in ticks) of a live process, or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    # Fields after the command (which may hold spaces) start after the last ')'.
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[19])


def descendants(pid):
    """[(pid, start)] of every live descendant. mcpo's servers run in sessions of their own,
    so its process group is mcpo alone: the tree, not the group, is what it runs."""
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            st = proc_stat(int(name))
            if st:
                children.setdefault(st[0], []).append((int(name), st[1]))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child[0])
    return out


def same_process_alive(pid, start):
    st = proc_stat(pid)
    return st is not None and st[1] == start


def end_leftovers(procs):
    """Ends (TERM, then KILL) those of `procs` still alive; returns how many there were."""
    left = [(pid, start) for pid, start in procs if same_process_alive(pid, start)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid, start in left:
            if same_process_alive(pid, start):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline and any(same_process_alive(p, s) for p, s in left):
            time.sleep(0.02)
    return len(left)


def tree_rss(pid):
    """(VmRSS kB of pid and its descendants, number of processes)."""
    procs = [(pid, None)] + descendants(pid)
    total = 0
    for p, _ in procs:
        st = proc_status(p)
        if st:
            total += st.get("VmRSS", 0)
    return total, len(procs)


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def stop_group(pgid, grace=5.0):
    """SIGTERM to the group, SIGKILL after `grace`; True when it ended within the grace."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return False


# ---------------------------------------------------------------- HTTP


def wait_200(port, path, t0, deadline, interval, headers=None, give_up=None):
    """Polls GET path until it answers 200; returns seconds since t0, or None at deadline.

    The front's listener is bound before the stack is ready, so a request may wait in the
    backlog until the front serves: it is then answered at once (short timeout, retried)."""
    while time.perf_counter() < deadline and not (give_up and give_up.is_set()):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=0.5)
        try:
            conn.request("GET", path, headers=headers or {})
            r = conn.getresponse()
            r.read()
            if r.status == 200:
                return time.perf_counter() - t0
        except (OSError, http.client.HTTPException):
            pass
        finally:
            conn.close()
        time.sleep(interval)
    return None


class Caller:
    """One kept-alive connection calling echo; reconnects (and counts it) if the server
    closed the idle connection."""

    def __init__(self, port, headers):
        self.port = port
        self.headers = dict(headers, **{"Content-Type": "application/json"})
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.reconnects = 0

    def call(self):
        for attempt in (0, 1):
            t = time.perf_counter()
            try:
                self.conn.request("POST", "/everything/echo", body=ECHO_BODY, headers=self.headers)
                r = self.conn.getresponse()
                data = r.read()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                if attempt:
                    raise
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
                self.reconnects += 1
                continue
            dt = time.perf_counter() - t
            if r.status != 200 or b"Echo: hi" not in data:
                raise RuntimeError(f"echo on port {self.port} answered {r.status}: {data[:300]!r}")
            return dt
        raise AssertionError("unreachable")

    def close(self):
        self.conn.close()


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


class Up:
    """A running `mcp-launch up` over the configs, started in a fresh working directory."""

    def __init__(self, bin_path, configs, workdir, env, log_file=None):
        os.makedirs(workdir)
        self.workdir = workdir
        self.stacks = [os.path.splitext(os.path.basename(c))[0] for c in configs]
        self.front_base = free_ports(len(configs))
        self.mcpo_base = free_ports(len(configs))
        args = [bin_path, "up"]
        for c in configs:
            args += ["--config", c]
        args += ["--tunnel", "none", "--json", "--port", str(self.front_base),
                 "--mcpo-port", str(self.mcpo_base)]
        if log_file:
            args += ["--log-file", log_file]
        self.log_file = log_file
        self.stderr = open(os.path.join(workdir, "up.stderr"), "w+b")
        self.doc = None
        self.json_at = None
        self.stopped = False
        self.epoch0 = time.time()
        self.t0 = time.perf_counter()
        # A session of its own: a Ctrl-C at the terminal reaches only this script, which then
        # stops `up` with one SIGTERM (a second signal would cut its graceful stop short).
        self.proc = subprocess.Popen(args, cwd=workdir, env=env, stdout=subprocess.PIPE,
                                     stderr=self.stderr, start_new_session=True)
        self.reader = threading.Thread(target=self._read_stdout, daemon=True)
        self.reader.start()

    def _read_stdout(self):
        buf = b""
        for line in self.proc.stdout:
            if self.doc is not None:
                continue
            buf += line
            if line.rstrip() == b"}":
                try:
                    self.doc = json.loads(buf)
                    self.json_at = time.perf_counter() - self.t0
                except ValueError:
                    pass

    def wait_ready(self):
        """Polls every front's /healthz from the start; returns per-stack seconds (None if a
        front never answered)."""
        deadline = self.t0 + UP_TIMEOUT
        results = [None] * len(self.stacks)
        exited = threading.Event()

        def poll(i):
            results[i] = wait_200(self.front_base + i, "/healthz", self.t0, deadline, 0.01, give_up=exited)

        threads = [threading.Thread(target=poll, args=(i,)) for i in range(len(self.stacks))]
        for t in threads:
            t.start()
        # Give up early if `up` exits (a failure prints its JSON and ends).
        while any(t.is_alive() for t in threads):
            if self.proc.poll() is not None:
                exited.set()
                break
            time.sleep(0.05)
        for t in threads:
            t.join()
        end = time.perf_counter() + 5
        while self.doc is None and time.perf_counter() < end:
            time.sleep(0.01)
        return results

    def state(self):
        with open(os.path.join(self.workdir, ".mcp-launch", "state.json")) as f:
            return json.load(f)

    def controller_groups(self):
        try:
            return {s["name"]: s["controller_process"]["pgid"] for s in self.state()["stacks"]
                    if s.get("controller_process")}
        except (OSError, ValueError, KeyError, TypeError):
            return {}

    def stop(self):
        """SIGTERM, wait; returns (seconds to exit, exit code, processes of its tree that
        outlived it — ended here)."""
        if self.stopped:
            return None
        self.stopped = True
        # Its tree now, plus the mcpos its state file records (they would outlive a crashed
        # `up` re-parented, outside its tree).
        tree = descendants(self.proc.pid)
        try:
            tree += [(s["controller_process"]["pgid"], s["controller_process"]["started"])
                     for s in self.state()["stacks"] if s.get("controller_process")]
        except (OSError, ValueError, KeyError, TypeError):
            pass
        tree = list(set(tree))
        t = time.perf_counter()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        took = time.perf_counter() - t
        self.reader.join(timeout=5)
        self.stderr.close()
        return took, code, end_leftovers(tree)

    def stderr_text(self):
        try:
            with open(os.path.join(self.workdir, "up.stderr"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""


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


def pct(sorted_values, p):
    return sorted_values[min(len(sorted_values) - 1, int(round(p / 100 * (len(sorted_values) - 1))))]


def lat_stats(samples):
    s = sorted(samples)
    return {"n": len(s), "p50": pct(s, 50), "p99": pct(s, 99), "mean": statistics.fmean(s),
            "min": s[0], "max": s[-1]}


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


def ms(s):
    return s * 1000


def spread(values, fmt="{:.0f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


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
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=3000, help="echo calls per path")
    ap.add_argument("--block", type=int, default=100, help="calls per interleaved block")
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    ap.add_argument("--render", metavar="FILE", help="print the report of a saved --json result")
    a = ap.parse_args()
    if a.render:
        with open(a.render) as f:
            print(report(json.load(f)))
        return
    for path in (a.bin, MCPO):
        if not os.access(path, os.X_OK):
            sys.exit(f"missing {path} (cargo build --release; bash scripts/install-test-deps.sh)")

    tmp = tempfile.mkdtemp(prefix="mcpl-bench-launch-")
    # A copy of the binary: a concurrent `cargo build` may replace target/release meanwhile.
    bin_copy = os.path.join(tmp, "mcp-launch")
    shutil.copy2(a.bin, bin_copy)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    if subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src"],
                      capture_output=True, text=True).stdout.strip():
        commit += " + uncommitted changes under src/"

    stacks = stack_servers(tmp)
    configs = [write_json(os.path.join(tmp, f"{name}.json"), {"mcpServers": servers})
               for name, servers in stacks.items()]
    bare_configs = [write_json(os.path.join(tmp, f"mcpo-{name}.json"),
                               mcpo_config(servers, os.path.join(tmp, f"memory-bare-{name}.jsonl")))
                    for name, servers in stacks.items()]
    env = dict(os.environ, NO_COLOR="1", MCP_LAUNCH_MCPO=MCPO,
               XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    env.pop("MCP_LAUNCH_API_KEY", None)

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
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            log(f"kept {tmp}")

    result = {"bin": os.path.relpath(a.bin, ROOT), "commit": commit, "operations": cold["operations"],
              "cold": cold, "rounds": rounds, "latency": lat}
    if a.json:
        print(json.dumps(result, indent=1))
    else:
        print(report(result))


if __name__ == "__main__":
    main()
