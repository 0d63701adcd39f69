"""Helpers shared by the benchmarks of `mcp-launch up` (bench/launch.py, bench/controllers.py):
paths of the installed servers, free ports, /proc (RSS, process trees, leftovers), HTTP polling
and a kept-alive echo caller, a running `up`, a minimal MCP stdio client, and the statistics and
number formats of the reports."""
import http.client
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPS = os.path.join(ROOT, ".deps")
NPM_BIN = os.path.join(DEPS, "npm", "node_modules", ".bin")
MCPO = os.path.join(DEPS, "venv-mcpo", "bin", "mcpo")
UP_TIMEOUT = 120.0
ECHO_BODY = b'{"message":"hi"}'


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def add_run_options(ap, calls_default, calls_help):
    """The options every benchmark of `up` takes."""
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=calls_default, help=calls_help)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    ap.add_argument("--render", metavar="FILE", help="print the report of a saved --json result")


def parse_run_args(ap, report):
    """The parsed options, or None after printing the report of a saved result (--render)."""
    a = ap.parse_args()
    if a.render:
        with open(a.render) as f:
            print(report(json.load(f)))
        return None
    return a


def everything_bin():
    return os.path.join(NPM_BIN, "mcp-server-everything")


def stack_config():
    """The benchmarks' stack: mcp-server-everything + mcp-server-time."""
    return {"mcpServers": {
        "everything": {"command": everything_bin(), "args": []},
        "time": {"command": os.path.join(DEPS, "venv-time", "bin", "mcp-server-time"), "args": []},
    }}


def bench_env(tmp):
    """The environment of every `mcp-launch` run: no colour, our mcpo, the caches in `tmp`
    (so the user's tool index and token counts are neither used nor touched), no key from
    the caller's environment."""
    env = dict(os.environ, NO_COLOR="1", MCP_LAUNCH_MCPO=MCPO, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    env.pop("MCP_LAUNCH_API_KEY", None)
    return env


def sandbox_env(tmp):
    """The environment of a gateway bench: HOME, caches, state and runtime dirs all inside
    `tmp` (nothing of the user's is read or written), no colour, no key from the caller."""
    home = os.path.join(tmp, "home")
    os.makedirs(home, exist_ok=True)
    env = dict(os.environ, HOME=home, NO_COLOR="1", XDG_CACHE_HOME=os.path.join(tmp, "cache"),
               XDG_STATE_HOME=os.path.join(tmp, "state"), XDG_RUNTIME_DIR=tmp)
    env.pop("MCP_LAUNCH_API_KEY", None)
    return env


def finish(tmp, keep, result, as_json, report):
    """Removes (or keeps) the temporary directory, then prints the result as JSON or as the
    report; `result` None: only the directory (the run failed)."""
    if keep:
        log(f"kept {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    if result is not None:
        print(json.dumps(result, indent=1) if as_json else report(result))


def prepare_run(bin_path, prefix):
    """Checks the binary and mcpo are there; returns (temporary directory, a copy of the
    binary in it, the commit label). The copy: a concurrent `cargo build` may replace
    target/release meanwhile. From here on SIGTERM ends the script like Ctrl-C, through the
    `finally` blocks that stop every process it started."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    for path in (bin_path, MCPO):
        if not os.access(path, os.X_OK):
            sys.exit(f"missing {path} (cargo build --release; bash scripts/install-test-deps.sh)")
    tmp = tempfile.mkdtemp(prefix=prefix)
    bin_copy = os.path.join(tmp, "mcp-launch")
    shutil.copy2(bin_path, bin_copy)
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    if subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--", "src"],
                      capture_output=True, text=True).stdout.strip():
        commit += " + uncommitted changes under src/"
    return tmp, bin_copy, commit


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=1)
    return path


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
    """{VmRSS, VmHWM, RssAnon, RssFile, RssShmem} in kB, or None when the process is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(":", 1)[0]
                if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
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


class Up:
    """A running `mcp-launch up` over the configs, started in a fresh working directory."""

    def __init__(self, bin_path, configs, workdir, env, log_file=None, extra_args=()):
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
        args += list(extra_args)
        self.args = args
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

    def recorded_groups(self):
        """[(pgid, start)] of the process groups the state file records: controller, tunnel
        and the native bridge's servers."""
        try:
            return [(p["pgid"], p["started"]) for s in self.state()["stacks"]
                    for p in [s.get("controller_process"), s.get("tunnel_process")]
                    + [b.get("process") for b in s.get("bridge_servers", [])] if p]
        except (OSError, ValueError, KeyError, TypeError):
            return []

    def stop(self):
        """SIGTERM, wait; returns (seconds to exit, exit code, processes of its tree or groups
        that outlived it — ended here). Also sets `groups_left`: how many of the process groups
        it recorded or its tree ran in still had a member after it exited (ended here)."""
        if self.stopped:
            return None
        self.stopped = True
        # Its tree now, plus the mcpos its state file records (they would outlive a crashed
        # `up` re-parented, outside its tree).
        tree = descendants(self.proc.pid)
        recorded = self.recorded_groups()
        tree = list(set(tree + recorded))
        groups = {self.proc.pid} | {pgid for pgid, _ in recorded}
        for pid, _ in tree:
            try:
                groups.add(os.getpgid(pid))
            except ProcessLookupError:
                pass
        groups.discard(os.getpgid(0))
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
        left = end_leftovers(tree)
        self.groups_left = 0
        for pgid in sorted(groups):
            if group_alive(pgid):
                self.groups_left += 1
                stop_group(pgid, grace=2.0)
        return took, code, left + self.groups_left

    def stderr_text(self):
        try:
            with open(os.path.join(self.workdir, "up.stderr"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""


# ---------------------------------------------------------------- MCP over stdio


def rpc(proc, msg):
    proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()


def read_response(proc, want_id):
    while True:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("server closed stdout")
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("id") == want_id and ("result" in msg or "error" in msg):
            return msg


class StdioSession:
    """A minimal MCP client kept open: spawns the server (a process group of its own), sends
    `initialize` (protocolVersion 2025-06-18) and `notifications/initialized`, then requests
    one at a time. No cost of ours is in it: the floor of a tool call."""

    def __init__(self, argv, env=None):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, start_new_session=True)
        self.next_id = 0
        try:
            init = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                               "clientInfo": {"name": "bench", "version": "0"}})
            if "result" not in init:
                raise RuntimeError(f"initialize failed: {init}")
            rpc(self.proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        except BaseException:
            self.close()
            raise

    def request(self, method, params):
        self.next_id += 1
        rpc(self.proc, {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return read_response(self.proc, self.next_id)

    def close(self):
        """Closes stdin, ends the server's group and whatever of its tree outlived it; returns
        the leftovers."""
        tree = descendants(self.proc.pid)
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        stop_group(self.proc.pid, grace=2.0)
        self.proc.wait()
        self.proc.stdout.close()
        return end_leftovers(tree)


# ---------------------------------------------------------------- statistics


def pct(sorted_values, p):
    return sorted_values[min(len(sorted_values) - 1, int(round(p / 100 * (len(sorted_values) - 1))))]


def lat_stats(samples):
    s = sorted(samples)
    return {"n": len(s), "p50": pct(s, 50), "p99": pct(s, 99), "mean": statistics.fmean(s),
            "min": s[0], "max": s[-1]}


def ms(s):
    return s * 1000


def spread(values, fmt="{:.0f}"):
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"

