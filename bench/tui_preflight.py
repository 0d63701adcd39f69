#!/usr/bin/env python3
"""Time from starting `mcp-launch up --tui` to a fully drawn preflight (issue 6).

Ten servers in one config: 4 × server-everything, 2 × mcp-server-time, 2 × mcp-server-memory,
1 × mcp-server-git and 1 broken server that exits at once. The TUI runs in tmux (120×40, a
private socket); the screen is read with `capture-pane` from the moment tmux starts
it (every 50 ms), and the time is taken when all ten rows are final (no row says `checking`) and the token
counts are in (the header's token total stops changing is not needed: the rows show tokens
once counted, so the time is taken when no TOKENS cell of a live server shows `-`).

For reference, the same ten servers through `mcp-launch list --refresh` (the CLI's parallel
preflight, same code) in the same round. Rounds alternate; each uses a fresh cache dir warmed
by one `list` first (token counts cached, as after any earlier run).

Usage: python3 bench/tui_preflight.py [--rounds 5] [--bin target/release/mcp-launch]
Prints a markdown report.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402
from common import DEPS, NPM_BIN, ROOT, log  # noqa: E402


def servers():
    everything = {"command": os.path.join(NPM_BIN, "mcp-server-everything")}
    time_ = {"command": os.path.join(DEPS, "venv-time", "bin", "mcp-server-time")}
    memory = {"command": os.path.join(NPM_BIN, "mcp-server-memory")}
    git = {"command": os.path.join(DEPS, "venv-git", "bin", "mcp-server-git")}
    broken = {"command": "/bin/sh", "args": ["-c", "echo 'missing token' >&2; exit 3"]}
    config = {}
    for i in range(4):
        config[f"everything{i}"] = everything
    for i in range(2):
        config[f"time{i}"] = time_
        config[f"memory{i}"] = memory
    config["git"] = dict(git, args=["--repository", ROOT])
    config["broken"] = broken
    return config


def final(screen, names):
    rows = [line for line in screen.splitlines() if any(f"a/{n} " in line for n in names)]
    if len(rows) < len(names):
        return False
    for row in rows:
        if "checking" in row:
            return False
        if row.lstrip("▸ ").startswith("ok") and " - " in row.split("stdio", 1)[-1][:20]:
            return False
    return True


def tui_round(bin_path, tmp, env, names):
    sock = os.path.join(tmp, "tmux.sock")
    envs = " ".join(f"{k}={v}" for k, v in env.items())
    command = f"cd {tmp} && env {envs} {bin_path} up --tui --config a.json; sleep 30"
    t0 = time.monotonic()
    subprocess.run(["tmux", "-S", sock, "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", command], check=True)
    first_frame = None
    try:
        while time.monotonic() - t0 < 60:
            screen = subprocess.run(["tmux", "-S", sock, "capture-pane", "-p", "-t", "t"],
                                    capture_output=True, text=True).stdout
            now = time.monotonic() - t0
            if first_frame is None and "mcp-launch · preflight" in screen:
                first_frame = now
            if final(screen, names):
                return first_frame, now
            time.sleep(0.05)
        raise RuntimeError("the preflight never completed:\n" + screen)
    finally:
        subprocess.run(["tmux", "-S", sock, "send-keys", "-t", "t", "C-c"], capture_output=True)
        time.sleep(0.3)
        subprocess.run(["tmux", "-S", sock, "send-keys", "-t", "t", "y"], capture_output=True)
        time.sleep(1.0)
        subprocess.run(["tmux", "-S", sock, "kill-server"], capture_output=True)


def list_round(bin_path, tmp, env):
    t0 = time.monotonic()
    subprocess.run([bin_path, "list", "--refresh", "--config", "a.json", "--json"], cwd=tmp,
                   env=dict(os.environ, **env), capture_output=True)
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    args = ap.parse_args()
    if not shutil.which("tmux"):
        sys.exit("tmux is needed (scripts/install-test-deps.sh installs it)")
    tmp = tempfile.mkdtemp(prefix="mcp-launch-tui-bench-")
    config = servers()
    with open(os.path.join(tmp, "a.json"), "w") as f:
        json.dump({"mcpServers": config}, f)
    env = {"HOME": tmp, "XDG_CACHE_HOME": os.path.join(tmp, "cache"), "NO_COLOR": "1"}
    list_round(args.bin, tmp, env)  # warms the token cache
    names = list(config)
    first, done, lists = [], [], []
    for r in range(args.rounds):
        f, d = tui_round(args.bin, tmp, env, names)
        l = list_round(args.bin, tmp, env)
        first.append(f)
        done.append(d)
        lists.append(l)
        log(f"round {r + 1}/{args.rounds}: first frame {f * 1000:.0f} ms, all rows final {d * 1000:.0f} ms; list --refresh {l * 1000:.0f} ms")
    shutil.rmtree(tmp, ignore_errors=True)
    med = lambda v: statistics.median(v) * 1000  # noqa: E731
    span = lambda v: f"{min(v) * 1000:.0f}–{max(v) * 1000:.0f}"  # noqa: E731
    print("#" + machine.heading("TUI preflight") + "\n")
    print(f"`python3 bench/tui_preflight.py --rounds {args.rounds}`: 10 servers (4 everything, 2 time, "
          "2 memory, git, 1 broken), tmux 120×40, screen polled every 50 ms from the start (tmux capture-pane is a process each time: polling faster takes CPU from the servers starting).\n")
    print("| | median ms | min–max |")
    print("|---|---:|---:|")
    print(f"| first frame (the preflight drawn, rows checking) | {med(first):.0f} | {span(first)} |")
    print(f"| **every row final (status, tools, tokens)** | **{med(done):.0f}** | {span(done)} |")
    print(f"| `mcp-launch list --refresh` (same servers, for reference) | {med(lists):.0f} | {span(lists)} |")


if __name__ == "__main__":
    main()
