#!/usr/bin/env python3
"""bench/top_cpu.py - what `mcp-launch top` costs while it watches (issue 28: < 1% of a core at 1 Hz).

  python3 bench/top_cpu.py [--bin target/debug/mcp-launch] [--seconds 60] [--rate 10] [--json]

Three gateways of the benchmarks' stack (server-everything + mcp-server-time) run in a fresh
HOME: a daemon (`serve --daemon`), an HTTP gateway (`serve --http 127.0.0.1:PORT`) and a stdio
gateway (`serve`, its stdin held open). A client calls `everything`'s echo through the daemon's
socket at --rate calls/s the whole time, so every sample `top` draws has changed figures.
`top` runs in a pseudo-terminal of 80x24 at its default 1 s refresh; after a 5 s warm-up its
utime+stime (/proc/PID/stat) are read, again --seconds later: CPU = ticks / CLK_TCK / seconds,
as a share of one core. Also reported: the bytes it wrote to the terminal per second (a view
that redrew every cell each second would write ~2 KB/s at 80x24; ratatui writes the changed
cells only).
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import json
import os
import pty
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, free_ports, log, stack_config  # noqa: E402
from machine import heading  # noqa: E402


def cpu_ticks(pid: int) -> int:
    """utime + stime of `pid`, in clock ticks."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def wait_for(what: str, check, seconds: float = 120.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for {what}")


def caller(sock_path: str, rate: float, stop: threading.Event, counts: list[int]) -> None:
    """Echo calls through the daemon's socket, one JSON line each, at `rate` per second."""
    conn = socket.socket(socket.AF_UNIX)
    conn.connect(sock_path)
    reader = conn.makefile("r")
    reader.readline()  # the greeting
    n = 0
    while not stop.is_set():
        n += 1
        line = {"id": n, "op": "call", "server": "everything", "tool": "echo",
                "arguments": {"message": f"m{n}"}, "timeout_ms": 30000}
        conn.sendall((json.dumps(line) + "\n").encode())
        reader.readline()
        counts[0] += 1
        time.sleep(1.0 / rate)
    conn.close()


def start_top(binary: str, env: dict) -> tuple[subprocess.Popen, int]:
    """`top` in an 80x24 pseudo-terminal; (process, master fd)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen([binary, "top"], stdin=slave, stdout=slave, stderr=slave, env=env,
                            start_new_session=True)
    os.close(slave)
    return proc, master


def drain(master: int, written: list[int], stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            chunk = os.read(master, 65536)
        except OSError:
            return
        if not chunk:
            return
        written[0] += len(chunk)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "debug", "mcp-launch"))
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=10.0, help="echo calls per second through the daemon")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    tmp = tempfile.mkdtemp(prefix="bench-top-")
    env = dict(os.environ, NO_COLOR="1", HOME=tmp, XDG_CACHE_HOME=os.path.join(tmp, "cache"),
               TERM="xterm-256color")
    for key in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "MCP_LAUNCH_DAEMON", "MCP_LAUNCH_METRICS"):
        env.pop(key, None)
    config = os.path.join(tmp, "config.json")
    with open(config, "w") as f:
        json.dump(stack_config(), f)
    run_dir = os.path.join(tmp, ".local", "state", "mcp-launch", "run")
    port = free_ports(1)
    base = [binary, "--config", config, "serve"]
    gateways = [
        subprocess.Popen(base + ["--daemon"], cwd=tmp, env=env, stderr=subprocess.DEVNULL),
        subprocess.Popen(base + ["--http", f"127.0.0.1:{port}"], cwd=tmp, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
        subprocess.Popen(base, cwd=tmp, env=env, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL),
    ]
    stop = threading.Event()
    top = None
    try:
        wait_for("three gateway sockets", lambda: len(glob.glob(os.path.join(run_dir, "*.sock"))) >= 3)
        daemon_socket = wait_for("the daemon socket", lambda: glob.glob(os.path.join(run_dir, "d-*.sock")))[0]
        calls = [0]
        threading.Thread(target=caller, args=(daemon_socket, args.rate, stop, calls), daemon=True).start()
        top, master = start_top(binary, env)
        written = [0]
        threading.Thread(target=drain, args=(master, written, stop), daemon=True).start()
        time.sleep(5.0)  # warm-up: first samples, the terminal set up
        ticks0, bytes0, calls0, t0 = cpu_ticks(top.pid), written[0], calls[0], time.monotonic()
        time.sleep(args.seconds)
        ticks1, bytes1, calls1, t1 = cpu_ticks(top.pid), written[0], calls[0], time.monotonic()
        elapsed = t1 - t0
        cpu = (ticks1 - ticks0) / os.sysconf("SC_CLK_TCK") / elapsed
        load = os.getloadavg()
        result = {
            "seconds": round(elapsed, 1),
            "cpu_share_of_one_core": round(cpu, 5),
            "cpu_ms_per_s": round(cpu * 1000, 2),
            "terminal_bytes_per_s": round((bytes1 - bytes0) / elapsed, 1),
            "calls_per_s_through_the_daemon": round((calls1 - calls0) / elapsed, 1),
            "gateways": 3,
            "load_average_1m": round(load[0], 2),
            "binary": binary,
        }
    finally:
        stop.set()
        if top is not None:
            os.killpg(top.pid, signal.SIGTERM)
            top.wait(10)
        subprocess.run([binary, "--config", config, "daemon", "stop"], cwd=tmp, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for g in gateways[1:]:
            g.send_signal(signal.SIGTERM)
        for g in gateways:
            try:
                g.wait(15)
            except subprocess.TimeoutExpired:
                g.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(heading("`mcp-launch top` CPU (issue 28, `bench/top_cpu.py`)"))
    print()
    print("| figure | goal | measured |")
    print("|---|---|---|")
    print(f"| CPU of `top` at 1 Hz, 3 gateways, {result['seconds']} s | < 1% of a core | "
          f"**{result['cpu_share_of_one_core'] * 100:.2f}%** ({result['cpu_ms_per_s']} ms/s) |")
    print(f"| bytes written to the 80x24 terminal | - | {result['terminal_bytes_per_s']} B/s |")
    print(f"| calls through the daemon meanwhile | - | {result['calls_per_s_through_the_daemon']}/s |")
    print(f"| load average (1 min) at the end | - | {result['load_average_1m']} |")
    log(f"binary: {binary}")


if __name__ == "__main__":
    main()
