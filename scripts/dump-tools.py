#!/usr/bin/env python3
"""Dump the tools of the installed test servers as search fixtures.

Speaks just enough MCP over stdio (newline-delimited JSON-RPC): initialize with protocol
version 2025-06-18, notifications/initialized, then tools/list (following nextCursor).
Writes a JSON object {server_name: [tool definitions]} to stdout, or merges the real servers
into an existing fixture file with --merge FILE (authored servers are kept, real ones replaced).

Usage (from the repository root, after scripts/install-test-deps.sh):
    python3 scripts/dump-tools.py                      # print the real servers' tools
    python3 scripts/dump-tools.py --merge tests/fixtures/search/tools.json
"""

import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPS = os.path.join(ROOT, ".deps")


def servers(tmp):
    """The real servers: name -> (argv, extra env)."""
    npm_bin = os.path.join(DEPS, "npm", "node_modules", ".bin")
    return {
        "everything": ([os.path.join(npm_bin, "mcp-server-everything")], {}),
        "filesystem": ([os.path.join(npm_bin, "mcp-server-filesystem"), tmp], {}),
        "memory": (
            [os.path.join(npm_bin, "mcp-server-memory")],
            {"MEMORY_FILE_PATH": os.path.join(tmp, "memory.jsonl")},
        ),
        "time": ([os.path.join(DEPS, "venv-time", "bin", "mcp-server-time")], {}),
        "git": ([os.path.join(DEPS, "venv-git", "bin", "mcp-server-git")], {}),
    }


class Client:
    """A minimal stdio JSON-RPC client: one request at a time, non-JSON lines skipped."""

    def __init__(self, argv, env):
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
        self.next_id = 1

    def send(self, message):
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"server closed its output during {method}")
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("id") == rid and "method" not in msg:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            if "method" in msg and "id" in msg:  # a server request: answer politely
                if msg["method"] == "ping":
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
                else:
                    self.send({"jsonrpc": "2.0", "id": msg["id"],
                               "error": {"code": -32601, "message": "not supported"}})

    def close(self):
        self.proc.kill()
        self.proc.wait()


def dump(argv, env):
    client = Client(argv, env)
    try:
        client.request("initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "mcp-launch-dump-tools", "version": "0"},
        })
        client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools, cursor, seen = [], None, set()
        while True:
            result = client.request("tools/list", {} if cursor is None else {"cursor": cursor})
            tools.extend(result.get("tools", []))
            cursor = result.get("nextCursor")
            if not cursor or cursor in seen:
                return tools
            seen.add(cursor)
    finally:
        client.close()


def main():
    with tempfile.TemporaryDirectory() as tmp:
        real = {name: dump(argv, env) for name, (argv, env) in servers(tmp).items()}
    if len(sys.argv) == 3 and sys.argv[1] == "--merge":
        path = sys.argv[2]
        with open(path) as f:
            merged = json.load(f)
        merged.update(real)
        with open(path, "w") as f:
            json.dump(merged, f, indent=1)
            f.write("\n")
    else:
        json.dump(real, sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()
