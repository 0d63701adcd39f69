#!/usr/bin/env python3
"""bench/http_nodelay.py - `ping` latency through `serve --http` from a client that writes a
request as headers then body (Python's http.client does, as the official TypeScript SDK's fetch
does): without TCP_NODELAY on the gateway's accepted socket, each answer waits ~40 ms for the
client's delayed ACK (issue 23 §1).

  python3 bench/http_nodelay.py [--bin target/debug/mcp-launch] [--calls 200]

Starts `serve --http` in front of mcp-server-time (.deps/venv-time) in a temporary HOME, opens
one kept-alive connection, initializes a session and times `ping`s: p50 and p90 in ms.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


def wait_listening(port: int) -> None:
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("the gateway never listened")


def pings(port: int, calls: int) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port)

    def post(message: dict, headers: dict) -> http.client.HTTPResponse:
        conn.request("POST", "/mcp", body=json.dumps(message), headers={**ACCEPT, **headers})
        answer = conn.getresponse()
        answer.read()
        return answer

    init = {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}
    answer = post({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}, {})
    session = {"mcp-session-id": answer.getheader("mcp-session-id"),
               "mcp-protocol-version": "2025-06-18"}
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    times = []
    for i in range(calls):
        started = time.perf_counter()
        post({"jsonrpc": "2.0", "id": i + 1, "method": "ping"}, session)
        times.append((time.perf_counter() - started) * 1000)
    return sorted(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", default=str(ROOT / "target/debug/mcp-launch"))
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        config = Path(home) / "config.json"
        server = ROOT / ".deps/venv-time/bin/mcp-server-time"
        config.write_text(json.dumps({"mcpServers": {"time": {"command": str(server)}}}))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = {**os.environ, "HOME": home, "XDG_CACHE_HOME": f"{home}/.cache"}
        gateway = subprocess.Popen(
            [args.bin, "--config", str(config), "serve", "--http", f"127.0.0.1:{port}", "--no-auth"],
            env=env, stderr=subprocess.DEVNULL)
        try:
            wait_listening(port)
            times = pings(port, args.calls)
        finally:
            gateway.terminate()
            gateway.wait()
    p90 = times[int(len(times) * 0.9)]
    print(f"ping over one kept-alive connection: p50 {statistics.median(times):.2f} ms, "
          f"p90 {p90:.2f} ms ({args.calls} calls)")


if __name__ == "__main__":
    main()
