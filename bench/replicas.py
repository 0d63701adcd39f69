#!/usr/bin/env python3
"""bench/replicas.py - replicas of `serve --http --state redis://…` (issue 28, "Run several").

  python3 bench/replicas.py [--bin target/debug/mcp-launch] [--seconds S] [--threads T]
                            [--calls N] [--json]

Starts Debian's redis-server and haproxy on free loopback ports, and gateways in front of the
fault server (`serve --http --mode full --max-output-tokens 300`), each with a state directory
of its own. Two figures:

- throughput: T threads of 2026-07-28 clients (one keep-alive connection each, `fault__echo`)
  for S seconds through HAProxy in front of 1 replica, then of 3 replicas (all with --state):
  calls/s of each, on the same machine;
- the latency the shared store adds: one gateway with local files and one with --state, called
  alternately at concurrency 1 (N calls per kind): an echo (the store is off the path: the usage
  line goes from a thread of its own), a call cut into a handle (the handle written), a
  read_output of a handle (the handle read); and a 2025-era session's call on a replica that
  does not hold it (restored from Redis) against a call on the replica that made it (held).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, free_ports, log  # noqa: E402

KEY = "bench-replicas-key-0123456789abcdef"
HANDLE = re.compile(r"h_[0-9a-f]{24}")
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
}


class Conn:
    """One keep-alive connection to a gateway's /mcp."""

    def __init__(self, port: int):
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.n = 0

    def post(self, message: dict, session: str | None = None, stateless: bool = True):
        self.n += 1
        message = dict(message, jsonrpc="2.0")
        if "method" in message and not message["method"].startswith("notifications/"):
            message["id"] = self.n
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "Authorization": f"Bearer {KEY}"}
        if stateless:
            headers.update({"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": message["method"]})
            if message["method"] == "tools/call":
                headers["Mcp-Name"] = message["params"]["name"]
                message["params"]["_meta"] = META
        if session:
            headers["Mcp-Session-Id"] = session
        self.http.request("POST", "/mcp", json.dumps(message), headers)
        response = self.http.getresponse()
        body = response.read().decode()
        sid = response.getheader("Mcp-Session-Id")
        if response.status >= 300:
            raise RuntimeError(f"{response.status}: {body[:200]}")
        for line in body.splitlines():
            if line.startswith("data:") and '"id"' in line:
                return sid, json.loads(line[5:])
        return sid, (json.loads(body) if body.startswith("{") else None)


def call(name: str, arguments: dict) -> dict:
    return {"method": "tools/call", "params": {"name": name, "arguments": arguments}}


def start(argv, log_path, env=None):
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(log_path, "w"), env=env)


def wait_ready(port: int, path: str = "/readyz", seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", path)
            if c.getresponse().status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"port {port} never answered {path}")


class Bench:
    def __init__(self, args):
        self.args = args
        self.tmp = tempfile.mkdtemp(prefix="bench-replicas-")
        self.procs: list[subprocess.Popen] = []
        fault = os.path.join(ROOT, "tests", "fixtures", "fault_server.py")
        self.config = os.path.join(self.tmp, "config.json")
        with open(self.config, "w") as f:
            json.dump({"mcpServers": {"fault": {"command": "python3", "args": [fault]}}}, f)
        self.redis_port = free_ports(1)
        self.procs.append(start(["redis-server", "--bind", "127.0.0.1", "--port", str(self.redis_port),
                                 "--save", "", "--appendonly", "no", "--dir", self.tmp],
                                os.path.join(self.tmp, "redis.log")))
        self.redis = f"redis://127.0.0.1:{self.redis_port}"
        self.n = 0

    def gateway(self, shared: bool) -> int:
        port = free_ports(1)
        self.n += 1
        home = os.path.join(self.tmp, f"g{self.n}")
        env = dict(os.environ, HOME=home, XDG_STATE_HOME=os.path.join(home, "state"),
                   XDG_CACHE_HOME=os.path.join(home, "cache"), NO_COLOR="1")
        for key in ("XDG_RUNTIME_DIR", "MCP_LAUNCH_STATE"):
            env.pop(key, None)
        argv = [self.args.bin, "--config", self.config, "serve", "--mode", "full",
                "--http", f"127.0.0.1:{port}", "--api-key", KEY, "--max-output-tokens", "300"]
        if shared:
            argv += ["--state", self.redis]
        self.procs.append(start(argv, os.path.join(home + ".log"), env))
        wait_ready(port)
        Conn(port).post(call("fault__echo", {"message": "warm"}))
        return port

    def haproxy(self, ports: list[int]) -> int:
        front = free_ports(1)
        servers = "".join(f"  server r{n} 127.0.0.1:{p} check\n" for n, p in enumerate(ports))
        path = os.path.join(self.tmp, f"haproxy-{front}.cfg")
        template = os.path.join(ROOT, "deploy", "haproxy.cfg")
        with open(template) as f:
            config = f.read().replace("FRONT", f"127.0.0.1:{front}").replace("SERVERS", servers)
        with open(path, "w") as f:
            f.write(config)
        self.procs.append(start(["haproxy", "-db", "-f", path], path + ".log"))
        wait_ready(front, "/healthz")
        time.sleep(1)  # every server checked up
        return front

    def throughput(self, front: int) -> dict:
        until = time.time() + self.args.seconds
        counts, errors = [0] * self.args.threads, [0] * self.args.threads

        def worker(i: int) -> None:
            conn = Conn(front)
            while time.time() < until:
                try:
                    conn.post(call("fault__echo", {"message": "x"}))
                    counts[i] += 1
                except Exception:
                    errors[i] += 1
                    conn = Conn(front)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(self.args.threads)]
        started = time.time()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        took = time.time() - started
        return {"calls_per_s": round(sum(counts) / took, 1), "calls": sum(counts), "errors": sum(errors)}

    def latencies(self, files: int, shared: int, other: int) -> dict:
        """Per kind of call, p50 in ms with local files and with Redis, alternating."""
        samples: dict = {}

        def timed(kind, side, f):
            t0 = time.perf_counter()
            f()
            samples.setdefault(kind, {}).setdefault(side, []).append((time.perf_counter() - t0) * 1000)

        for side, port in (("files", files), ("redis", shared)):
            Conn(port).post(call("fault__huge", {"bytes": 40000}))  # warm the tokenizer
        for i in range(self.args.calls):
            for side, port in (("files", files), ("redis", shared)):
                conn = Conn(port)
                timed("echo", side, lambda: conn.post(call("fault__echo", {"message": "x"})))
                holder = {}
                timed("cut into a handle", side, lambda: holder.update(
                    answer=conn.post(call("fault__huge", {"bytes": 40000 + i}))[1]))
                handle = HANDLE.search(json.dumps(holder["answer"])).group(0)
                timed("read_output", side, lambda: conn.post(
                    call("read_output", {"handle": handle, "offset": 1, "limit": 2})))
            # A session made on one replica, its first call on another (restored from Redis).
            init = {"method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "bench", "version": "1"}}}
            sid, _ = Conn(shared).post(init, stateless=False)
            Conn(shared).post({"method": "notifications/initialized"}, sid, stateless=False)
            there = Conn(other)
            timed("a session's first call on another replica", "restored",
                  lambda: there.post(call("fault__echo", {"message": "x"}), sid, stateless=False))
            here = Conn(shared)
            timed("a session's first call on another replica", "held",
                  lambda: here.post(call("fault__echo", {"message": "x"}), sid, stateless=False))
        out = {}
        for kind, sides in samples.items():
            p50 = {side: round(statistics.median(v), 3) for side, v in sides.items()}
            base, slow = ("held", "restored") if "held" in p50 else ("files", "redis")
            p50["added_ms"] = round(p50[slow] - p50[base], 3)
            out[kind] = p50
        return out

    def stop(self) -> None:
        for p in self.procs:
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "debug", "mcp-launch"))
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--threads", type=int, default=12)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    bench = Bench(args)
    try:
        shared = [bench.gateway(True) for _ in range(3)]
        files = bench.gateway(False)
        log("latency: files vs redis")
        result = {"latency_p50_ms": bench.latencies(files, shared[0], shared[1])}
        log("throughput: 1 replica")
        result["one_replica"] = bench.throughput(bench.haproxy(shared[:1]))
        log("throughput: 3 replicas")
        result["three_replicas"] = bench.throughput(bench.haproxy(shared))
        result["ratio"] = round(result["three_replicas"]["calls_per_s"] / result["one_replica"]["calls_per_s"], 2)
        result["load_average"] = os.getloadavg()
        print(json.dumps(result, indent=None if args.json else 2))
    finally:
        bench.stop()


if __name__ == "__main__":
    main()
