#!/usr/bin/env python3
"""bench/clients/py_latency.py - call one tool N times with the official Python MCP SDK (2.x) and
print the latencies, for bench/real_clients.py. Run it with the SDK's venv
(.deps/venv-sdk/bin/python).

  py_latency.py (--stdio CMD ARG... | --http URL [--key KEY])
                [--calls N] [--concurrency C] [--tool NAME] [--args JSON] [--warmup N]

Prints one JSON object: {"protocolVersion", "ping_ms", "samples_ms": [...], "wall_s"}. Every call
must succeed (a tool error or an exception ends the run with exit 1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from contextlib import asynccontextmanager

import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--http")
    p.add_argument("--key")
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--tool", default="echo")
    p.add_argument("--args", default='{"message": "hi"}')
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--stdio", nargs=argparse.REMAINDER)
    args = p.parse_args()
    if not args.http and not args.stdio:
        p.error("need --stdio or --http")
    return args


@asynccontextmanager
async def connect(args):
    if args.stdio:
        params = StdioServerParameters(command=args.stdio[0], args=args.stdio[1:])
        with open("/dev/null", "w") as devnull:
            async with stdio_client(params, errlog=devnull) as (read, write):
                async with ClientSession(read, write) as session:
                    yield session
    else:
        headers = {"Authorization": f"Bearer {args.key}"} if args.key else {}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with streamable_http_client(args.http, http_client=http) as (read, write, *_):
                async with ClientSession(read, write) as session:
                    yield session


async def call_once(session: ClientSession, tool: str, arguments: dict) -> float:
    started = time.perf_counter()
    result = await session.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"tool error: {result.content}")
    return elapsed


async def run(args) -> dict:
    arguments = json.loads(args.args)
    async with connect(args) as session:
        init = await session.initialize()
        for _ in range(args.warmup):
            await call_once(session, args.tool, arguments)
        started = time.perf_counter()
        await session.send_ping()
        ping_ms = (time.perf_counter() - started) * 1000
        samples: list[float] = []
        remaining = args.calls

        async def worker() -> None:
            nonlocal remaining
            while remaining > 0:
                remaining -= 1
                samples.append(await call_once(session, args.tool, arguments))

        wall_started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        version = getattr(init, "protocol_version", None) or getattr(init, "protocolVersion", None)
        return {
            "protocolVersion": version,
            "ping_ms": ping_ms,
            "samples_ms": samples,
            "wall_s": time.perf_counter() - wall_started,
        }


def main() -> None:
    args = parse()
    try:
        out = asyncio.run(run(args))
    except Exception as e:  # noqa: BLE001 - reported, and the run fails
        print(f"py_latency: {e!r}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
