#!/usr/bin/env python3
"""Abuse on loopback: does a stack's front hold up?

Starts `mcp-launch up` (native controller) over mcp-server-time, then, phase by phase, abuses
its front while a prober asks `GET /healthz` every 20 ms on fresh connections:

  baseline   nothing else
  slowloris  SOCKETS connections that send a request line and one header, then trickle a
             header line every 2 s and never finish (the front must cut them at its header
             timeout, 10 s, and keep answering others)
  badkeys    REQUESTS requests with a wrong key, 50 at a time, on kept-alive connections
  bodies     BODIES concurrent POSTs of BODY_MB MB each: with a wrong key (refused before the
             body is read) and then, 20 at a time, with the right key to a tool (read, parsed,
             refused as invalid arguments)

Reports per phase: /healthz latency p50/p99/max and failures, the `up` process's peak RSS
(sampled every 50 ms), and for slowloris how many sockets the front closed, and when.

With --target gateway (or both), the same abuse of `mcp-launch serve --http` instead, while a
normal MCP client keeps asking (bench/abuse_gateway.py: slow clients, held connections, a
flood of sessions, wrong keys).

    cargo build --release && python3 bench/abuse.py [--target front|gateway|both] [--json]
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abuse_gateway  # noqa: E402
import common  # noqa: E402
from common import Up, bench_env, lat_stats, log, prepare_run, proc_status  # noqa: E402

KEY = "abuse-bench-key-0123456789abcdef"


class Prober(threading.Thread):
    """GET /healthz every 20 ms on a fresh connection; latencies and failures."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.samples, self.failures, self.stop = port, [], 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            t = time.perf_counter()
            try:
                c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                c.request("GET", "/healthz")
                ok = c.getresponse().status == 200
                c.close()
            except OSError:
                ok = False
            if ok:
                self.samples.append(time.perf_counter() - t)
            else:
                self.failures += 1
            self.stop.wait(0.02)


class RssSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            rss = proc_status(self.pid).get("VmRSS", 0)
            self.peak = max(self.peak, rss)
            self.stop.wait(0.05)


def phase(name, port, pid, work):
    prober, rss = Prober(port), RssSampler(pid)
    prober.start()
    rss.start()
    t = time.perf_counter()
    extra = work() or {}
    elapsed = time.perf_counter() - t
    prober.stop.set()
    rss.stop.set()
    prober.join()
    rss.join()
    stats = lat_stats(prober.samples) if prober.samples else None
    result = {"phase": name, "seconds": elapsed, "healthz": stats, "healthz_failures": prober.failures,
              "peak_rss_kb": rss.peak, **extra}
    log(f"{name}: {json.dumps(result)}")
    return result


def slowloris(port, sockets, hold):
    def work():
        opened, start = [], time.perf_counter()
        for _ in range(sockets):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            s.setblocking(False)
            opened.append(s)
        closed_at = {}
        while time.perf_counter() - start < hold:
            for i, s in enumerate(opened):
                if i in closed_at:
                    continue
                try:
                    if s.recv(1) == b"":
                        closed_at[i] = time.perf_counter() - start
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    closed_at[i] = time.perf_counter() - start
                    continue
                try:
                    s.sendall(b"X-a: b\r\n")
                except (BlockingIOError, OSError):
                    pass
            time.sleep(2)
        for s in opened:
            s.close()
        times = sorted(closed_at.values())
        return {"sockets": sockets, "closed_by_front": len(times),
                "closed_after_s_median": times[len(times) // 2] if times else None}
    return work


def bad_keys(port, requests):
    def one(n):
        # Kept alive while the front keeps the connection (it closes one whose body it did
        # not read): then a new one.
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        statuses = {}
        for _ in range(n):
            try:
                c.request("POST", "/time/get_current_time", body=b"{}",
                          headers={"X-API-Key": "wrong-key-wrong-key-wrong", "Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                status = r.status
                if r.will_close:
                    c.close()
                    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            except OSError as e:
                status = type(e).__name__
                c.close()
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            statuses[status] = statuses.get(status, 0) + 1
        c.close()
        return statuses

    def work():
        per = requests // 50
        total = {}
        with concurrent.futures.ThreadPoolExecutor(50) as pool:
            for statuses in pool.map(one, [per] * 50):
                for k, v in statuses.items():
                    total[str(k)] = total.get(str(k), 0) + v
        return {"requests": per * 50, "statuses": total}
    return work


def bodies(port, count, megabytes, key, parallel):
    body = b'{"timezone": "' + b"x" * (megabytes * 1024 * 1024) + b'"}'

    def one(_):
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            c.request("POST", "/time/get_current_time", body=body,
                      headers={"X-API-Key": key, "Content-Type": "application/json"})
            r = c.getresponse()
            r.read()
            c.close()
            return r.status
        except OSError as e:
            return type(e).__name__

    def work():
        statuses = {}
        with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
            for status in pool.map(one, range(count)):
                statuses[str(status)] = statuses.get(str(status), 0) + 1
        return {"bodies": count, "mb_each": megabytes, "parallel": parallel, "statuses": statuses}
    return work


def report(result):
    lines = [f"abuse bench on {result['machine']}, {result['date']}, commit {result['commit']}"]
    if result["phases"]:
        lines += ["| phase | load | /healthz p50 | p99 | max | failed | up peak RSS | notes |",
                  "|---|---|---|---|---|---|---|---|"]
    for p in result["phases"]:
        h = p["healthz"] or {}
        load = {k: v for k, v in p.items() if k in ("sockets", "requests", "bodies", "mb_each", "parallel")}
        notes = {k: v for k, v in p.items() if k in ("closed_by_front", "closed_after_s_median", "statuses")}
        lines.append(f"| {p['phase']} | {load or '-'} | {h.get('p50', 0) * 1000:.2f} ms | {h.get('p99', 0) * 1000:.2f} ms "
                     f"| {h.get('max', 0) * 1000:.1f} ms | {p['healthz_failures']} | {p['peak_rss_kb'] / 1024:.1f} MB | {notes} |")
    if result.get("gateway"):
        lines += ["", abuse_gateway.report(result["gateway"])]
    return "\n".join(lines)


def front_phases(a, bin_copy, config, tmp, env):
    up = Up(bin_copy, [config], os.path.join(tmp, "work"), env, extra_args=["--controller", "native"])
    try:
        up.wait_ready()
        port = up.front_base
        pid = up.proc.pid
        work = {
            "baseline": lambda: (lambda: time.sleep(3)),
            "slowloris": lambda: slowloris(port, a.sockets, a.hold),
            "badkeys": lambda: bad_keys(port, a.requests),
            "bodies-wrong": lambda: bodies(port, a.bodies, a.body_mb, "wrong-key-wrong-key-wrong", a.bodies),
            "bodies-right": lambda: bodies(port, a.bodies, a.body_mb, KEY, 20),
        }
        return [phase(name, port, pid, work[name]()) for name in a.phases.split(",")]
    finally:
        up.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(common.ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--sockets", type=int, default=2000)
    ap.add_argument("--hold", type=float, default=15.0, help="seconds the slowloris sockets are held")
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--bodies", type=int, default=200)
    ap.add_argument("--body-mb", type=int, default=10)
    ap.add_argument("--phases", default="baseline,slowloris,badkeys,bodies-wrong,bodies-right")
    ap.add_argument("--target", choices=["front", "gateway", "both"], default="front")
    ap.add_argument("--sessions", type=int, default=12000, help="initializes of the gateway's sessions phase")
    ap.add_argument("--gateway-phases", default="baseline,slowloris,connections,sessions,badkeys")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    tmp, bin_copy, commit = prepare_run(a.bin, "abuse-")
    config = common.write_json(os.path.join(tmp, "a.json"), {"mcpServers": {"time": {
        "command": os.path.join(common.DEPS, "venv-time", "bin", "mcp-server-time")}}})
    env = dict(bench_env(tmp), MCP_LAUNCH_API_KEY=KEY)
    machine = os.uname().nodename
    result = {"commit": commit, "date": time.strftime("%Y-%m-%d"), "machine": machine, "phases": []}
    if a.target in ("front", "both"):
        result["phases"] = front_phases(a, bin_copy, config, tmp, env)
    if a.target in ("gateway", "both"):
        result["gateway"] = abuse_gateway.run(a, tmp, bin_copy, config, bench_env(tmp), KEY)
    common.finish(tmp, a.keep, result, a.json, report)


if __name__ == "__main__":
    main()
