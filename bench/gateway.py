#!/usr/bin/env python3
"""bench/gateway.py - the figures of `mcp-launch serve` (issue 14), side by side in one run.

Run with the tiktoken venv (it counts o200k tokens):
  .deps/venv-tiktoken/bin/python bench/gateway.py [--bin target/release/mcp-launch] [--calls N] [--json]

1. Tokens of `tools/list`, full vs sparse, on the 33-server development catalog
   (tests/fixtures/search-bench/tools, each served by the fault server with --only-file-tools;
   the gateway answers from the tool index, so the servers' own code does not matter).
2. `tools/list` latency and the gateway's RSS with those 33 servers configured and none
   running; the servers' start counts prove nothing started.
3. Added latency per call: a raw stdio JSON-RPC client calling `echo` on the fault server
   directly, and through the gateway (stdio), p50/p99 at concurrency 1 and 16, and throughput.
4. First call to a lazy server through the gateway vs that server's own start-to-answer time
   (spawn, initialize, first call) measured directly.
5. `mcp-launch call` as a whole process through the daemon (`serve --daemon`) vs the direct
   path (`--daemon off`, which starts the server for the call), p50/p99; and `call --batch` of
   N lines through the daemon vs in one process without it.
6. `mcp-launch list --json` and `mcp-launch search QUERY --json` as whole processes on the
   33-server catalog, through the daemon vs the direct path (both answer from a fresh tool
   index: nothing starts either way), p50/p99; by meaning too when a model is installed
   (MCP_LAUNCH_MODEL_DIR or `mcp-launch model install`).

`--only daemon` runs sections 5 and 6 alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, log, proc_status  # noqa: E402

FAULT = os.path.join(ROOT, "tests", "fixtures", "fault_server.py")
CATALOG = os.path.join(ROOT, "tests", "fixtures", "search-bench", "tools")


class Peer:
    """A raw newline-delimited JSON-RPC client over a child's stdio."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 1
        self.pending: dict[int, asyncio.Future] = {}
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def start(cls, argv: list[str], cwd: str, env: dict) -> "Peer":
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, limit=64 * 1024 * 1024)
        return cls(proc)

    async def _read(self) -> None:
        while line := await self.proc.stdout.readline():
            msg = json.loads(line)
            fut = self.pending.pop(msg.get("id"), None) if "id" in msg and "method" not in msg else None
            if fut and not fut.done():
                fut.set_result(msg)

    async def request(self, method: str, params: dict | None = None) -> dict:
        rid = self.next_id
        self.next_id += 1
        fut = asyncio.get_running_loop().create_future()
        self.pending[rid] = fut
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.proc.stdin.write((json.dumps(msg) + "\n").encode())
        await self.proc.stdin.drain()
        reply = await fut
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    async def initialize(self) -> dict:
        result = await self.request("initialize", {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}})
        self.proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        return result

    async def close(self) -> None:
        self.proc.stdin.close()
        try:
            await asyncio.wait_for(self.proc.wait(), 15)
        except asyncio.TimeoutError:
            self.proc.kill()
        self.reader.cancel()


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def catalog_config(tmp: str, starts: str) -> str:
    servers = {}
    for name in sorted(os.listdir(CATALOG)):
        server = name.removesuffix(".json")
        servers[server] = {"command": sys.executable, "args": [
            FAULT, "--only-file-tools", "--tools-file", os.path.join(CATALOG, name), "--starts", starts]}
    path = os.path.join(tmp, "catalog.json")
    with open(path, "w") as f:
        json.dump({"mcpServers": servers}, f)
    return path


async def seed_index(bin_path: str, config: str, tmp: str, env: dict) -> None:
    proc = await asyncio.create_subprocess_exec(
        bin_path, "--config", config, "list", cwd=tmp, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    await proc.wait()


def count_starts(path: str) -> int:
    try:
        with open(path) as f:
            return sum(1 for _ in f)
    except FileNotFoundError:
        return 0


async def catalog_figures(bin_path: str, tmp: str, env: dict, rounds: int) -> dict:
    import tiktoken

    enc = tiktoken.get_encoding("o200k_base")
    starts = os.path.join(tmp, "catalog-starts")
    config = catalog_config(tmp, starts)
    await seed_index(bin_path, config, tmp, env)
    seeded = count_starts(starts)
    out: dict = {"servers": len(os.listdir(CATALOG))}
    for mode in ("full", "sparse"):
        peer = await Peer.start([bin_path, "--config", config, "serve", "--mode", mode], tmp, env)
        await peer.initialize()
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            listed = await peer.request("tools/list")
            times.append((time.perf_counter() - t0) * 1000)
        tokens = len(enc.encode(json.dumps(listed["tools"], separators=(",", ":"))))
        rss = proc_status(peer.proc.pid) or {}
        out[mode] = {"tools": len(listed["tools"]), "tokens": tokens,
                     "list_ms_p50": statistics.median(times), "list_ms_p99": pct(times, 0.99),
                     "rss_mb": round(rss.get("VmRSS", 0) / 1024, 1)}
        await peer.close()
    out["started_by_listing"] = count_starts(starts) - seeded
    out["sparse_share"] = out["sparse"]["tokens"] / out["full"]["tokens"]
    return out


async def call_loop(peer: Peer, name: str, calls: int, concurrency: int) -> dict:
    samples: list[float] = []

    async def worker(n: int) -> None:
        for _ in range(n):
            t0 = time.perf_counter()
            await peer.request("tools/call", {"name": name, "arguments": {"message": "hi"}})
            samples.append((time.perf_counter() - t0) * 1000)

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(calls // concurrency) for _ in range(concurrency)))
    wall = time.perf_counter() - t0
    return {"p50_ms": statistics.median(samples), "p99_ms": pct(samples, 0.99),
            "calls_per_s": len(samples) / wall}


async def one_config(bin_path: str, tmp: str, env: dict) -> str:
    """`one.json`: the fault server alone, its tool index entry seeded."""
    config = os.path.join(tmp, "one.json")
    with open(config, "w") as f:
        json.dump({"mcpServers": {"fault": {"command": sys.executable, "args": [FAULT]}}}, f)
    await seed_index(bin_path, config, tmp, env)
    return config


async def latency_figures(bin_path: str, tmp: str, env: dict, calls: int) -> dict:
    config = await one_config(bin_path, tmp, env)
    out: dict = {}
    for concurrency in (1, 16):
        direct = await Peer.start([sys.executable, FAULT], tmp, env)
        await direct.initialize()
        await call_loop(direct, "echo", 50, 1)  # warm-up
        gateway = await Peer.start([bin_path, "--config", config, "serve", "--mode", "full"], tmp, env)
        await gateway.initialize()
        await call_loop(gateway, "fault__echo", 50, 1)
        # Interleaved halves, so drift on a busy machine hits both sides alike.
        d1 = await call_loop(direct, "echo", calls // 2, concurrency)
        g1 = await call_loop(gateway, "fault__echo", calls // 2, concurrency)
        d2 = await call_loop(direct, "echo", calls // 2, concurrency)
        g2 = await call_loop(gateway, "fault__echo", calls // 2, concurrency)
        merge = lambda a, b: {k: (a[k] + b[k]) / 2 for k in a}  # noqa: E731
        d, g = merge(d1, d2), merge(g1, g2)
        out[f"c{concurrency}"] = {"direct": d, "gateway": g,
                                  "added_p50_ms": g["p50_ms"] - d["p50_ms"],
                                  "added_p99_ms": g["p99_ms"] - d["p99_ms"]}
        await direct.close()
        await gateway.close()
    return out


async def first_call_figures(bin_path: str, tmp: str, env: dict, rounds: int) -> dict:
    config = os.path.join(tmp, "one.json")
    direct_ms, lazy_ms = [], []
    for _ in range(rounds):
        t0 = time.perf_counter()
        direct = await Peer.start([sys.executable, FAULT], tmp, env)
        await direct.initialize()
        await direct.request("tools/call", {"name": "echo", "arguments": {"message": "hi"}})
        direct_ms.append((time.perf_counter() - t0) * 1000)
        await direct.close()
        gateway = await Peer.start([bin_path, "--config", config, "serve", "--mode", "full"], tmp, env)
        await gateway.initialize()
        await gateway.request("tools/list")
        t0 = time.perf_counter()
        await gateway.request("tools/call", {"name": "fault__echo", "arguments": {"message": "hi"}})
        lazy_ms.append((time.perf_counter() - t0) * 1000)
        await gateway.close()
    return {"server_own_start_to_answer_ms": statistics.median(direct_ms),
            "gateway_first_call_ms": statistics.median(lazy_ms),
            "added_ms": statistics.median(lazy_ms) - statistics.median(direct_ms)}


async def run_timed(argv: list[str], tmp: str, env: dict, stdin: bytes | None = None) -> float:
    t0 = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=tmp, env=env, stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    await proc.communicate(stdin)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}")
    return (time.perf_counter() - t0) * 1000


async def daemon_figures(bin_path: str, tmp: str, env: dict, rounds: int, lines: int) -> dict:
    config = os.path.join(tmp, "one.json")
    call = [bin_path, "--config", config, "call", "fault", "echo", '{"message": "hi"}']
    direct = [await run_timed(call + ["--daemon", "off"], tmp, env) for _ in range(rounds)]
    daemon = await asyncio.create_subprocess_exec(
        bin_path, "--config", config, "serve", "--daemon", cwd=tmp, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    batch = "\n".join(json.dumps({"server": "fault", "tool": "echo", "arguments": {"message": str(i)}})
                      for i in range(lines)).encode()
    batch_argv = [bin_path, "--config", config, "call", "--batch", "-"]
    alone_ms = await run_timed(batch_argv + ["--daemon", "off"], tmp, env, batch)
    for _ in range(100):  # until the daemon answers
        try:
            await run_timed(call, tmp, env)
            break
        except SystemExit:
            await asyncio.sleep(0.1)
    ridden = [await run_timed(call, tmp, env) for _ in range(rounds * 5)]
    ridden_batch_ms = await run_timed(batch_argv, tmp, env, batch)
    daemon.terminate()
    await daemon.wait()
    return {"direct_p50_ms": statistics.median(direct), "direct_p99_ms": pct(direct, 0.99),
            "daemon_p50_ms": statistics.median(ridden), "daemon_p99_ms": pct(ridden, 0.99),
            "batch_lines": lines, "batch_without_daemon_ms": alone_ms,
            "batch_through_daemon_ms": ridden_batch_ms}


async def view_figures(bin_path: str, tmp: str, env: dict, rounds: int) -> dict:
    starts = os.path.join(tmp, "view-starts")
    config = catalog_config(tmp, starts)
    await seed_index(bin_path, config, tmp, env)
    views = {
        "list": ["list", "--json"],
        "search": ["search", "read a file", "--method", "bm25", "--json"],
        "search_hybrid": ["search", "read a file", "--json"],
    }
    has_model = await run_ok([bin_path, "--config", config, "search", "x", "--method", "hybrid", "--json",
                              "--daemon", "off"], tmp, env)
    if not has_model:
        del views["search_hybrid"]
    daemon = await asyncio.create_subprocess_exec(
        bin_path, "--config", config, "serve", "--daemon", cwd=tmp, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    for _ in range(200):  # until the daemon answers (and its tool vectors are in)
        if await daemon_is_up(bin_path, tmp, env):
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)
    before = count_starts(starts)
    # Direct and through the daemon alternate, so a busy host weighs on both alike.
    timed = {}
    for name, argv in views.items():
        base = [bin_path, "--config", config] + argv
        await run_timed(base + ["--daemon", "off"], tmp, env)  # warm the page cache
        await run_timed(base, tmp, env)
        timed[name] = {"direct": [], "daemon": []}
        for _ in range(rounds):
            timed[name]["direct"].append(await run_timed(base + ["--daemon", "off"], tmp, env))
            timed[name]["daemon"].append(await run_timed(base, tmp, env))
    started = count_starts(starts) - before
    daemon.terminate()
    await daemon.wait()
    out = {"servers_started_through_daemon": started}
    for name, t in timed.items():
        out[name] = {"direct_p50_ms": statistics.median(t["direct"]), "direct_p99_ms": pct(t["direct"], 0.99),
                     "daemon_p50_ms": statistics.median(t["daemon"]), "daemon_p99_ms": pct(t["daemon"], 0.99)}
    return out


async def run_ok(argv: list[str], tmp: str, env: dict) -> bool:
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=tmp, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    return await proc.wait() == 0


async def daemon_is_up(bin_path: str, tmp: str, env: dict) -> bool:
    proc = await asyncio.create_subprocess_exec(
        bin_path, "daemon", "status", "--json", cwd=tmp, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    out, _ = await proc.communicate()
    try:
        return any(g.get("kind") == "daemon" for g in json.loads(out)["gateways"])
    except (ValueError, KeyError):
        return False


def report_views(v: dict) -> list[str]:
    lines = []
    for name in ("list", "search", "search_hybrid"):
        if name in v:
            t = v[name]
            lines.append(f"`{name.replace('_', ' ')}` whole process: direct p50 {t['direct_p50_ms']:.1f} / "
                         f"p99 {t['direct_p99_ms']:.1f} ms; through the daemon p50 {t['daemon_p50_ms']:.1f} / "
                         f"p99 {t['daemon_p99_ms']:.1f} ms")
    lines.append(f"servers started by the views through the daemon: {v['servers_started_through_daemon']}")
    return lines


def report(r: dict) -> str:
    if "catalog" not in r:
        return report_daemon(r)
    c = r["catalog"]
    lines = [
        f"catalog: {c['servers']} servers; tools/list full {c['full']['tools']} tools = {c['full']['tokens']} tokens, "
        f"sparse {c['sparse']['tools']} tools = {c['sparse']['tokens']} tokens ({c['sparse_share']:.2%})",
        f"tools/list with none running: full p50 {c['full']['list_ms_p50']:.2f} ms (p99 {c['full']['list_ms_p99']:.2f}), "
        f"sparse p50 {c['sparse']['list_ms_p50']:.2f} ms; servers started by listing: {c['started_by_listing']}; "
        f"RSS full {c['full']['rss_mb']} MB, sparse {c['sparse']['rss_mb']} MB",
    ]
    for key, v in r["latency"].items():
        lines.append(
            f"call {key}: direct p50 {v['direct']['p50_ms']:.3f} / p99 {v['direct']['p99_ms']:.3f} ms "
            f"({v['direct']['calls_per_s']:.0f}/s); gateway p50 {v['gateway']['p50_ms']:.3f} / "
            f"p99 {v['gateway']['p99_ms']:.3f} ms ({v['gateway']['calls_per_s']:.0f}/s); "
            f"added p50 {v['added_p50_ms']:.3f} ms, p99 {v['added_p99_ms']:.3f} ms")
    f = r["first_call"]
    lines.append(f"first call: server's own start-to-answer {f['server_own_start_to_answer_ms']:.1f} ms; "
                 f"through the gateway {f['gateway_first_call_ms']:.1f} ms (added {f['added_ms']:+.1f} ms)")
    d = r["daemon"]
    lines.append(f"`call` whole process: direct p50 {d['direct_p50_ms']:.1f} / p99 {d['direct_p99_ms']:.1f} ms; "
                 f"through the daemon p50 {d['daemon_p50_ms']:.1f} / p99 {d['daemon_p99_ms']:.1f} ms; "
                 f"`call --batch` of {d['batch_lines']}: {d['batch_without_daemon_ms']:.0f} ms without a daemon, "
                 f"{d['batch_through_daemon_ms']:.0f} ms through it")
    lines += report_views(r["views"])
    return "\n".join(lines)


def report_daemon(r: dict) -> str:
    d = r["daemon"]
    lines = [f"`call` whole process: direct p50 {d['direct_p50_ms']:.1f} / p99 {d['direct_p99_ms']:.1f} ms; "
             f"through the daemon p50 {d['daemon_p50_ms']:.1f} / p99 {d['daemon_p99_ms']:.1f} ms"]
    return "\n".join(lines + report_views(r["views"]))


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--only", choices=["daemon"], help="only the daemon's figures (sections 5 and 6)")
    args = ap.parse_args()
    args.bin = os.path.abspath(args.bin)
    tmp = tempfile.mkdtemp(prefix="bench-gateway-")
    env = dict(os.environ, NO_COLOR="1", HOME=tmp, XDG_CACHE_HOME=os.path.join(tmp, "cache"))
    for key in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "MCP_LAUNCH_DAEMON"):
        env.pop(key, None)
    env.setdefault("TIKTOKEN_CACHE_DIR", os.path.join(ROOT, ".deps", "tiktoken-cache"))
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", env["TIKTOKEN_CACHE_DIR"])
    if args.only == "daemon":
        await one_config(args.bin, tmp, env)
        log("daemon figures")
        daemon = await daemon_figures(args.bin, tmp, env, args.rounds, 1000)
        log("view figures")
        views = await view_figures(args.bin, tmp, env, args.rounds)
        result = {"daemon": daemon, "views": views, "bin": args.bin}
        print(json.dumps(result, indent=1) if args.json else report(result))
        return
    log("catalog figures")
    catalog = await catalog_figures(args.bin, tmp, env, args.rounds * 10)
    log("latency figures")
    latency = await latency_figures(args.bin, tmp, env, args.calls)
    log("first-call figures")
    first = await first_call_figures(args.bin, tmp, env, args.rounds)
    log("daemon figures")
    daemon = await daemon_figures(args.bin, tmp, env, args.rounds, 1000)
    log("view figures")
    views = await view_figures(args.bin, tmp, env, args.rounds)
    result = {"catalog": catalog, "latency": latency, "first_call": first, "daemon": daemon,
              "views": views, "bin": args.bin}
    print(json.dumps(result, indent=1) if args.json else report(result))


if __name__ == "__main__":
    asyncio.run(main())
