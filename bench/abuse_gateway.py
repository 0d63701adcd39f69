"""Abuse of the gateway's HTTP listener (`mcp-launch serve --http`), for bench/abuse.py
--target gateway. A normal MCP client keeps one session and asks `tools/list` every 20 ms
(each answer must come within 1 s; a 404 means its session was lost), while:

  baseline     nothing else
  slowloris    SOCKETS connections that trickle header lines and never finish
  connections  SOCKETS connections that send one complete request, then sit idle, kept alive
  sessions     SESSIONS `initialize`s from 20 threads (each a session the gateway must bound)
  badkeys      REQUESTS requests with a wrong key, 50 at a time

Reports per phase: the client's latency p50/p99/max, its failures, the sessions it lost, and
the gateway's peak RSS (sampled every 50 ms) and its RSS when the phase ended."""
import concurrent.futures
import http.client
import json
import os
import socket
import subprocess
import threading
import time

import common
from common import lat_stats, log, proc_status

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "abuse", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def post(conn, key, body, session=None):
    """POSTs a JSON-RPC message to /mcp: (status, session id, body)."""
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-06-18", "Authorization": f"Bearer {key}"}
    if session:
        headers["Mcp-Session-Id"] = session
    conn.request("POST", "/mcp", body=json.dumps(body), headers=headers)
    r = conn.getresponse()
    return r.status, r.getheader("mcp-session-id"), r.read()


def open_session(conn, key):
    status, session, _ = post(conn, key, INIT)
    if status != 200 or not session:
        raise OSError(f"initialize answered {status}")
    post(conn, key, INITIALIZED, session)
    return session


class Client(threading.Thread):
    """The normal client: one session, `tools/list` every 20 ms on a kept-alive connection."""

    def __init__(self, port, key):
        super().__init__(daemon=True)
        self.port, self.key = port, key
        self.samples, self.failures, self.lost, self.stop = [], 0, 0, threading.Event()

    def run(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        session = open_session(conn, self.key)
        while not self.stop.is_set():
            t = time.perf_counter()
            try:
                status, _, body = post(conn, self.key, LIST, session)
                ok = status == 200 and b'"tools"' in body
                if status == 404:
                    self.lost += 1
                    session = open_session(conn, self.key)
            except (OSError, http.client.HTTPException):
                ok = False
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
            if ok:
                self.samples.append(time.perf_counter() - t)
            else:
                self.failures += 1
            self.stop.wait(0.02)
        conn.close()


class RssSampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.last, self.stop = pid, 0, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.last = proc_status(self.pid).get("VmRSS", 0)
            self.peak = max(self.peak, self.last)
            self.stop.wait(0.05)


def phase(name, port, key, pid, work):
    client, rss = Client(port, key), RssSampler(pid)
    client.start()
    rss.start()
    t = time.perf_counter()
    extra = work() or {}
    elapsed = time.perf_counter() - t
    client.stop.set()
    rss.stop.set()
    client.join()
    rss.join()
    stats = lat_stats(client.samples) if client.samples else None
    result = {"phase": name, "seconds": elapsed, "client": stats, "client_failures": client.failures,
              "sessions_lost": client.lost, "peak_rss_kb": rss.peak, "end_rss_kb": rss.last, **extra}
    log(f"gateway {name}: {json.dumps(result)}")
    return result


def held(port, sockets, hold, opening):
    """SOCKETS connections that each send `opening` and then wait; how many the gateway closed."""
    def work():
        opened, start = [], time.perf_counter()
        for _ in range(sockets):
            s = socket.create_connection(("127.0.0.1", port))
            s.sendall(opening)
            s.setblocking(False)
            opened.append(s)
        closed = 0
        while time.perf_counter() - start < hold:
            time.sleep(1)
        for s in opened:
            try:
                while True:
                    if s.recv(65536) == b"":
                        closed += 1
                        break
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
            s.close()
        return {"sockets": sockets, "closed_by_gateway": closed}
    return work


def slowloris(port, sockets, hold):
    return held(port, sockets, hold, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")


def idle_connections(port, sockets, hold, key):
    body = json.dumps(INIT).encode()
    request = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               f"Accept: application/json, text/event-stream\r\nAuthorization: Bearer {key}\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    return held(port, sockets, hold, request)


def sessions(port, count, key):
    def one(n):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        made = 0
        for _ in range(n):
            try:
                post(conn, key, INIT)
                made += 1
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.close()
        return made

    def work():
        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            made = sum(pool.map(one, [count // 20] * 20))
        return {"initializes": made}
    return work


def bad_keys(port, requests):
    def one(n):
        conn, statuses = http.client.HTTPConnection("127.0.0.1", port, timeout=10), {}
        for _ in range(n):
            try:
                status = post(conn, "wrong-key-wrong-key-wrong", LIST, "x")[0]
            except (OSError, http.client.HTTPException) as e:
                status = type(e).__name__
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            statuses[str(status)] = statuses.get(str(status), 0) + 1
        conn.close()
        return statuses

    def work():
        total = {}
        with concurrent.futures.ThreadPoolExecutor(50) as pool:
            for statuses in pool.map(one, [requests // 50] * 50):
                for k, v in statuses.items():
                    total[k] = total.get(k, 0) + v
        return {"requests": requests, "statuses": total}
    return work


def wait_listening(port, proc, deadline=60.0):
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"serve exited with {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("serve --http did not listen")


def run(a, tmp, bin_copy, config, env, key):
    """Runs the gateway's phases; returns their results."""
    port = common.free_ports(1)
    argv = [bin_copy, "--config", config, "serve", "--http", f"127.0.0.1:{port}", "--api-key", key]
    proc = subprocess.Popen(argv, env=env, cwd=tmp, stdout=subprocess.DEVNULL,
                            stderr=open(os.path.join(tmp, "serve.log"), "w"))
    try:
        wait_listening(port, proc)
        work = {
            "baseline": lambda: (lambda: time.sleep(3)),
            "slowloris": lambda: slowloris(port, a.sockets, a.hold),
            "connections": lambda: idle_connections(port, a.sockets, a.hold, key),
            "sessions": lambda: sessions(port, a.sessions, key),
            "badkeys": lambda: bad_keys(port, a.requests),
        }
        wanted = [p for p in a.gateway_phases.split(",") if p]
        return [phase(name, port, key, proc.pid, work[name]()) for name in wanted]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()


def report(phases):
    lines = ["| gateway phase | load | client p50 | p99 | max | failed | sessions lost | peak RSS | RSS after | notes |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for p in phases:
        c = p["client"] or {}
        load = {k: v for k, v in p.items() if k in ("sockets", "requests", "initializes")}
        notes = {k: v for k, v in p.items() if k in ("closed_by_gateway", "statuses")}
        lines.append(f"| {p['phase']} | {load or '-'} | {c.get('p50', 0) * 1000:.2f} ms | {c.get('p99', 0) * 1000:.2f} ms "
                     f"| {c.get('max', 0) * 1000:.1f} ms | {p['client_failures']} | {p['sessions_lost']} "
                     f"| {p['peak_rss_kb'] / 1024:.1f} MB | {p['end_rss_kb'] / 1024:.1f} MB | {notes} |")
    return "\n".join(lines)
