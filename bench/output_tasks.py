#!/usr/bin/env python3
"""bench/output_tasks.py - tokens and round trips of four everyday file tasks (issue 16), with
the lean tools server and @modelcontextprotocol/server-filesystem behind one gateway.

Run with the tiktoken venv (it counts o200k tokens):
  .deps/venv-tiktoken/bin/python bench/output_tasks.py [--bin target/release/mcp-launch]
      [--repo DIR --function NAME] [--json] [--keep]

One `mcp-launch serve --mode full` (stdio, raw JSON-RPC) fronts two servers over the same roots
(a temporary directory with the fixtures, and the "large repo"): `lean` = `mcp-launch tools
serve --root TMP --root REPO`, `fs` = mcp-server-filesystem TMP REPO (.deps/npm). Every task
runs twice: with the default budget (`serve` and `tools serve` at 6,000 tokens) and uncut
(`--max-output-tokens 0` for both), the same policy each time.

Fixtures: a 5 MB log of numbered lines; the large repo: ~/.cargo/registry/src/<index>/ as it
is (no copy; ~500 crates, ~27,000 files) and a function defined there exactly once and used in
other files (default `with_graceful_shutdown`, axum's; the script checks it with grep and, if
the tree or the function is missing, builds a synthetic repo of 3,000 files with one
definition and many uses instead); a directory of 10,000 small files; a 200 KB minified JSON
(one line) whose `$.meta.checksum` sits at its end.

Policies (what an agent does, fixed; a round trip = one tools/call):
- log tail: lean `lean__tail {path, n: 100}`; fs `fs__read_text_file {path, tail: 100}`.
  Complete: the file's last 100 lines were received.
- definition: lean `lean__grep {pattern: "fn NAME\\b", path: REPO}`. fs has no content search:
  `fs__search_files {path: REPO, pattern: "**/*WORD*"}` for each word of NAME of 5+ letters,
  then `fs__read_text_file` of every `.rs` hit in order until one defines NAME; a read that was
  cut is searched with `read_output {handle, grep: "fn NAME\\b"}`; at most 30 round trips.
  Complete: the defining file and line were seen. (Also measured, not a policy: fs reading the
  defining file directly, as if the agent had guessed it; and lean `grep` of the bare name,
  `\\bNAME\\b`, leaning on its ranking, definitions first.)
- dir listing, every entry: lean `lean__ls {path}`; fs `fs__list_directory {path}`; when cut,
  `read_output {handle, offset}` page after page until the note says there is no more.
  Complete: all 10,000 names were received.
- dir listing, one entry: the same first call; when cut, `read_output {handle, grep: NAME}`.
  Complete: the entry of one file in the middle (`report-05000.csv`) was received.
- minified JSON: lean `lean__cat {path}`; fs `fs__read_text_file {path}`; when cut,
  `read_output {handle, jsonpath: "$.meta.checksum"}` on the handle of the content.
  Complete: the checksum's value was received.

`read_output` is the gateway's (the lean server's handles live in the same store and scope).
Tokens: o200k of every content block the client received (text blocks' text; other blocks as
JSON), summed over the task's round trips; `structuredContent` (server-filesystem sends its
text a second time there) is counted apart.
"""

from __future__ import annotations

import argparse
import asyncio
import glob
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import ROOT, log  # noqa: E402
from gateway import Peer  # noqa: E402

FILESYSTEM = os.path.join(ROOT, ".deps", "npm", "node_modules", ".bin", "mcp-server-filesystem")
DEFAULT_FUNCTION = "with_graceful_shutdown"
LOG_MB = 5
DIR_FILES = 10_000
JSON_KB = 200
TAIL = 100
ONE_ENTRY = "report-05000.csv"
MAX_TRIPS = 30


# ---------------------------------------------------------------- fixtures


def make_log(path: str) -> int:
    """A 5 MB log of numbered lines; returns the number of lines."""
    lines, size, i = [], 0, 0
    while size < LOG_MB * 1_000_000:
        line = (f"{i + 1:07d} 2026-11-25T21:{i // 60 % 60:02d}:{i % 60:02d}Z INFO request "
                f"id={i * 7919 % 10_000_000:08d} path=/api/v1/items/{i % 977} status=200 took={i % 89}ms\n")
        lines.append(line)
        size += len(line)
        i += 1
    with open(path, "w") as f:
        f.writelines(lines)
    return i


def make_dir(path: str) -> None:
    os.makedirs(path)
    for i in range(DIR_FILES):
        with open(os.path.join(path, f"report-{i:05d}.csv"), "w") as f:
            f.write(f"id,value\n{i},{i * 31 % 1000}\n")


def make_json(path: str) -> str:
    """A minified JSON of one line, ~200 KB, `$.meta.checksum` last; returns the checksum."""
    rng = random.Random(16)
    items = []
    size = 0
    while size < JSON_KB * 1000:
        item = {"id": len(items), "sku": f"SKU-{rng.randrange(16**6):06x}",
                "price": rng.randrange(100, 99999) / 100, "stock": rng.randrange(500),
                "tags": rng.sample(["red", "blue", "green", "xl", "s", "m", "sale", "new"], 2)}
        items.append(item)
        size += len(json.dumps(item, separators=(",", ":"))) + 1
    checksum = f"{rng.getrandbits(64):016x}"
    doc = {"version": 3, "items": items, "meta": {"count": len(items), "checksum": checksum}}
    with open(path, "w") as f:
        f.write(json.dumps(doc, separators=(",", ":")))
    return checksum


def find_definition(repo: str, name: str) -> list[tuple[str, int]]:
    """(file, 1-based line) of every `fn NAME` under repo, by grep."""
    out = subprocess.run(["grep", "-rnE", "--include=*.rs", rf"\bfn {name}\b", repo],
                         capture_output=True, text=True).stdout
    hits = []
    for line in out.splitlines():
        path, number, _ = line.split(":", 2)
        hits.append((path, int(number)))
    return hits


def make_synthetic_repo(path: str, name: str) -> None:
    """3,000 Rust files in 60 modules; `fn NAME` defined once (in a file not named after it)
    and called from 200 files."""
    rng = random.Random(7)
    for m in range(60):
        os.makedirs(os.path.join(path, "src", f"mod{m:02d}"))
    for i in range(3000):
        body = [f"// file {i}\nuse crate::util;\n"]
        for j in range(40):
            body.append(f"pub fn helper_{i}_{j}(x: u64) -> u64 {{\n    x.wrapping_mul({rng.randrange(1, 999)})\n}}\n")
        if i % 15 == 0:
            body.append(f"pub fn caller_{i}() {{\n    crate::net::{name}(Default::default());\n}}\n")
        if i == 1717:
            body.append(f"pub fn {name}(config: Config) -> Server {{\n    Server::new(config)\n}}\n")
        with open(os.path.join(path, "src", f"mod{i % 60:02d}", f"part_{i:04d}.rs"), "w") as f:
            f.write("".join(body))


def pick_repo(requested: str | None, name: str, tmp: str) -> tuple[str, str, int, bool]:
    """(repo, defining file, line, synthetic?)."""
    candidates = [requested] if requested else sorted(glob.glob(os.path.expanduser("~/.cargo/registry/src/*/")))
    for repo in candidates:
        if repo and os.path.isdir(repo):
            hits = find_definition(repo.rstrip("/"), name)
            if len(hits) == 1:
                return os.path.realpath(repo), os.path.realpath(hits[0][0]), hits[0][1], False
            log(f"{repo}: `fn {name}` defined {len(hits)} times, not once; using a synthetic repo")
    repo = os.path.join(tmp, "repo")
    make_synthetic_repo(repo, name)
    (path, line), = find_definition(repo, name)
    return os.path.realpath(repo), os.path.realpath(path), line, True


# ---------------------------------------------------------------- the client side


class Session:
    """One task run by one policy: every call, its tokens, whether it was cut."""

    def __init__(self, peer: Peer, enc) -> None:
        self.peer, self.enc = peer, enc
        self.calls: list[dict] = []
        self.notes: list[str] = []

    async def call(self, name: str, arguments: dict) -> dict:
        result = await self.peer.request("tools/call", {"name": name, "arguments": arguments})
        blocks = result.get("content", [])
        text = "".join(b["text"] if b.get("type") == "text" else json.dumps(b) for b in blocks)
        cuts = ((result.get("_meta") or {}).get("mcp-launch/outputs") or {}).get("cuts", [])
        structured = result.get("structuredContent")
        self.calls.append({
            "tool": name, "arguments": arguments,
            "tokens": len(self.enc.encode(text, disallowed_special=())),
            "structured_tokens": len(self.enc.encode(json.dumps(structured, ensure_ascii=False), disallowed_special=()))
            if structured is not None else 0,
            "cut": bool(cuts), "error": bool(result.get("isError")),
        })
        result["_text"] = text
        result["_handle"] = next((c["handle"] for c in cuts if c.get("part") == "content"), None)
        return result

    def summary(self, complete: bool, note: str = "") -> dict:
        note = "; ".join(self.notes + ([note] if note else []))
        return {"round_trips": len(self.calls), "tokens": sum(c["tokens"] for c in self.calls),
                "structured_tokens": sum(c["structured_tokens"] for c in self.calls),
                "cut_calls": sum(c["cut"] for c in self.calls), "complete": complete, "note": note,
                "calls": self.calls}


MORE = re.compile(r"more: offset (\d+)")
HANDLE = re.compile(r'"handle": "(h_[0-9a-f]{24})"')
CUT_ENVELOPE = re.compile(r"\[mcp-launch: this result was over[^\]]*$")


async def follow_envelope(s: Session, r: dict) -> dict:
    """The handle and envelope to read on from. A lean answer near the budget can come back
    with the lean server's own envelope cut by the gateway (two budgets of 6,000 in a row):
    the text then ends in a fragment of that envelope and the gateway's handle holds only it.
    The agent reads that handle whole to get the lean server's handle (one more round trip)."""
    blocks = [b.get("text", "") for b in r.get("content", []) if b.get("type") == "text"]
    if r["_handle"] and any(CUT_ENVELOPE.search(b) for b in blocks[:-1]):
        inner = await s.call("read_output", {"handle": r["_handle"]})
        m = HANDLE.search(inner["_text"])
        if m:
            s.notes.append("the lean envelope was cut by the gateway: +1 trip to read it")
            return {"_handle": m.group(1), "_text": inner["_text"]}
    return r


async def read_all_pages(s: Session, text: str, first: dict) -> str:
    """Follows a cut answer with read_output {handle, offset} until the note has no `more`."""
    handle = first["_handle"]
    m = re.search(r'"offset": (\d+)', first["_text"])
    offset = int(m.group(1)) if m else None
    while handle and offset is not None and len(s.calls) < 400:
        page = await s.call("read_output", {"handle": handle, "offset": offset})
        text += page["_text"]
        m = MORE.search(page["_text"])
        offset = int(m.group(1)) if m else None
    return text


# ---------------------------------------------------------------- the tasks


async def task_tail(peer, enc, server, fx) -> dict:
    s = Session(peer, enc)
    if server == "lean":
        r = await s.call("lean__tail", {"path": fx["log"], "n": TAIL})
    else:
        r = await s.call("fs__read_text_file", {"path": fx["log"], "tail": TAIL})
    wanted = [f"{n:07d} " for n in range(fx["log_lines"] - TAIL + 1, fx["log_lines"] + 1)]
    got = [w for w in wanted if w in r["_text"]]
    note = "" if len(got) == TAIL else f"{len(got)} of the last {TAIL} lines received"
    return s.summary(len(got) == TAIL, note)


def defines(text: str, name: str) -> bool:
    return re.search(rf"\bfn {re.escape(name)}\b", text) is not None


async def task_definition(peer, enc, server, fx) -> dict:
    s = Session(peer, enc)
    name, repo = fx["function"], fx["repo"]
    rel = os.path.relpath(fx["def_file"], repo)
    if server == "lean":
        r = await s.call("lean__grep", {"pattern": rf"fn {name}\b", "path": repo})
        ok = rel in r["_text"] and f"{fx['def_line']}:" in r["_text"]
        return s.summary(ok)
    words = [w for w in name.split("_") if len(w) >= 5]
    hits: list[str] = []
    for word in words:
        r = await s.call("fs__search_files", {"path": repo, "pattern": f"**/*{word}*"})
        for line in r["_text"].splitlines():
            path = line.strip()
            if path.endswith(".rs") and path not in hits:
                hits.append(path)
    for path in hits:
        if len(s.calls) >= MAX_TRIPS:
            break
        r = await s.call("fs__read_text_file", {"path": path})
        found = defines(r["_text"], name)
        if not found and r["_handle"] and len(s.calls) < MAX_TRIPS:
            g = await s.call("read_output", {"handle": r["_handle"], "grep": rf"fn {name}\b"})
            found = defines(g["_text"], name)
        if found:
            return s.summary(os.path.realpath(path) == fx["def_file"])
    read = sum(c["tool"] == "fs__read_text_file" for c in s.calls)
    note = (f"not found: no content search; {read} of the {len(hits)} `.rs` files named after a "
            f"word of the name ({', '.join(words)}) read, none defines it")
    return s.summary(False, note)


async def task_definition_known_file(peer, enc, server, fx) -> dict | None:
    """Not a policy: the cost of reading the defining file when the agent already knows it."""
    if server == "lean":
        return None
    s = Session(peer, enc)
    r = await s.call("fs__read_text_file", {"path": fx["def_file"]})
    found = defines(r["_text"], fx["function"])
    if not found and r["_handle"]:
        g = await s.call("read_output", {"handle": r["_handle"], "grep": rf"fn {fx['function']}\b"})
        found = defines(g["_text"], fx["function"])
    return s.summary(found)


async def task_definition_bare_name(peer, enc, server, fx) -> dict | None:
    """Not a policy: lean `grep` of the bare name, leaning on its ranking (definitions first)."""
    if server == "fs":
        return None
    s = Session(peer, enc)
    r = await s.call("lean__grep", {"pattern": rf"\b{fx['function']}\b", "path": fx["repo"]})
    rel = os.path.relpath(fx["def_file"], fx["repo"])
    ok = rel in r["_text"] and f"{fx['def_line']}:" in r["_text"]
    first = next((line for line in r["_text"].splitlines() if line and not line[0].isdigit()), "")
    return s.summary(ok, f"first file listed: {os.path.relpath(first.strip(), fx['repo'])}")


async def list_call(s: Session, server: str, fx) -> dict:
    if server == "lean":
        return await s.call("lean__ls", {"path": fx["dir"]})
    return await s.call("fs__list_directory", {"path": fx["dir"]})


async def task_ls_all(peer, enc, server, fx) -> dict:
    s = Session(peer, enc)
    first = await list_call(s, server, fx)
    r = await follow_envelope(s, first)
    text = await read_all_pages(s, first["_text"], r) if r["_handle"] else first["_text"]
    names = set(re.findall(r"report-\d{5}\.csv", text))
    return s.summary(len(names) == DIR_FILES, "" if len(names) == DIR_FILES else f"{len(names):,} names received")


async def task_ls_one(peer, enc, server, fx) -> dict:
    s = Session(peer, enc)
    first = await list_call(s, server, fx)
    r = await follow_envelope(s, first)
    text = first["_text"]
    if ONE_ENTRY not in text and r["_handle"]:
        g = await s.call("read_output", {"handle": r["_handle"], "grep": re.escape(ONE_ENTRY)})
        text = g["_text"]
    return s.summary(ONE_ENTRY in text)


async def task_json(peer, enc, server, fx) -> dict:
    s = Session(peer, enc)
    if server == "lean":
        r = await s.call("lean__cat", {"path": fx["json"]})
    else:
        r = await s.call("fs__read_text_file", {"path": fx["json"]})
    text = r["_text"]
    r = await follow_envelope(s, r)
    if fx["checksum"] not in text and r["_handle"]:
        g = await s.call("read_output", {"handle": r["_handle"], "jsonpath": "$.meta.checksum"})
        text = g["_text"]
    return s.summary(fx["checksum"] in text)


TASKS = [
    ("log tail", f"last {TAIL} lines of a {LOG_MB} MB log", task_tail),
    ("definition", "where a function is defined in a large repo", task_definition),
    ("dir: every entry", f"list a directory of {DIR_FILES:,} files (all names)", task_ls_all),
    ("dir: one entry", f"list a directory of {DIR_FILES:,} files (one name in the middle)", task_ls_one),
    ("minified JSON", f"one key of a {JSON_KB} KB minified JSON", task_json),
]


# ---------------------------------------------------------------- run


def write_config(path: str, bin_path: str, roots: list[str], budget: int | None) -> str:
    lean = ["tools", "serve"] + [a for r in roots for a in ("--root", r)]
    if budget is not None:
        lean += ["--max-output-tokens", str(budget)]
    with open(path, "w") as f:
        json.dump({"mcpServers": {"lean": {"command": bin_path, "args": lean},
                                  "fs": {"command": FILESYSTEM, "args": roots}}}, f)
    return path


async def run_budget(bin_path: str, tmp: str, env: dict, fx: dict, enc, budget: int | None) -> dict:
    label = "cut" if budget is None else "uncut"
    config = write_config(os.path.join(tmp, f"{label}.json"), bin_path, [fx["root"], fx["repo"]], budget)
    argv = [bin_path, "--config", config, "serve", "--mode", "full"]
    if budget is not None:
        argv += ["--max-output-tokens", str(budget)]
    peer = await Peer.start(argv, tmp, env)
    out: dict = {}
    try:
        await peer.initialize()
        listed = await peer.request("tools/list", {})
        names = {t["name"] for t in listed["tools"]}
        # Uncut, the gateway lists no read_output (nothing is ever cut).
        for needed in ("lean__tail", "fs__read_text_file") + (("read_output",) if budget is None else ()):
            if needed not in names:
                raise SystemExit(f"the gateway does not list {needed}: {sorted(names)}")
        for key, _, fn in TASKS:
            for server in ("lean", "fs"):
                log(f"{label}: {key} / {server}")
                out[f"{key}|{server}"] = await fn(peer, enc, server, fx)
        log(f"{label}: definition, fs reading the known file; lean grep of the bare name")
        out["definition, file known|fs"] = await task_definition_known_file(peer, enc, "fs", fx)
        out["definition, bare name|lean"] = await task_definition_bare_name(peer, enc, "lean", fx)
    finally:
        await peer.close()
    return out


def report(r: dict) -> str:
    from machine import heading

    fx = r["fixtures"]
    title = "Output tasks — lean tools vs server-filesystem behind the gateway (`bench/output_tasks.py`)"
    lines = [heading(title), "",
             f"Binary: `{os.path.relpath(r['bin'], ROOT)}`. Fixtures: {fx['log_mb']} MB log "
             f"({fx['log_lines']:,} lines); repo {fx['repo_label']} ({fx['repo_files']:,} files), "
             f"`fn {fx['function']}` defined once at {fx['def_rel']}:{fx['def_line']}; {DIR_FILES:,} files "
             f"in one directory; {fx['json_kb']} KB minified JSON (one line, {fx['json_items']:,} items). "
             "o200k tokens of the content blocks received, summed over the task's round trips; budget "
             "6,000 (default) vs uncut (`--max-output-tokens 0` on `serve` and `tools serve`).", "",
             "| task | server | round trips | tokens | complete | uncut: trips | uncut: tokens | saving "
             "| + structuredContent (cut / uncut) |",
             "|---|---|---:|---:|---|---:|---:|---:|---:|"]
    keys = [k for k, _, _ in TASKS] + ["definition, file known", "definition, bare name"]
    for key in keys:
        for server in ("lean", "fs"):
            c, u = r["cut"].get(f"{key}|{server}"), r["uncut"].get(f"{key}|{server}")
            if not c:
                continue
            mark = "yes" if c["complete"] else "**no**"
            if c["note"]:
                mark += f" ({c['note']})"
            umark = "" if u["complete"] else " (incomplete)"
            saving = f"{1 - c['tokens'] / u['tokens']:.0%}".replace("-", "−") if u["tokens"] else "–"
            st = (f"{c['structured_tokens']:,} / {u['structured_tokens']:,}"
                  if c["structured_tokens"] or u["structured_tokens"] else "–")
            lines.append(f"| {key} | {server} | {c['round_trips']} | {c['tokens']:,} | {mark} | "
                         f"{u['round_trips']}{umark} | {u['tokens']:,} | {saving} | {st} |")
    return "\n".join(lines)


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "mcp-launch"))
    ap.add_argument("--repo", help="the large repo (default: ~/.cargo/registry/src/<index>/)")
    ap.add_argument("--function", default=DEFAULT_FUNCTION, help="a function defined once in --repo")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--render", metavar="FILE", help="print the report of a saved --json result")
    args = ap.parse_args()
    if args.render:
        with open(args.render) as f:
            print(report(json.load(f)))
        return
    args.bin = os.path.abspath(args.bin)
    for path in (args.bin, FILESYSTEM):
        if not os.access(path, os.X_OK):
            sys.exit(f"missing {path} (cargo build; bash scripts/install-test-deps.sh)")
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", os.path.join(ROOT, ".deps", "tiktoken-cache"))
    import tiktoken

    enc = tiktoken.get_encoding("o200k_base")
    tmp = os.path.realpath(tempfile.mkdtemp(prefix="bench-output-tasks-"))
    env = dict(os.environ, NO_COLOR="1", HOME=tmp, XDG_CACHE_HOME=os.path.join(tmp, "cache"),
               XDG_CONFIG_HOME=os.path.join(tmp, "config"), XDG_DATA_HOME=os.path.join(tmp, "data"))
    for key in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "MCP_LAUNCH_DAEMON", "MCP_LAUNCH_API_KEY"):
        env.pop(key, None)
    try:
        root = os.path.join(tmp, "files")
        os.makedirs(root)
        log("fixtures")
        fx: dict = {"root": root, "log": os.path.join(root, "app.log"), "dir": os.path.join(root, "reports"),
                    "json": os.path.join(root, "catalog.min.json"), "function": args.function, "log_mb": LOG_MB}
        fx["log_lines"] = make_log(fx["log"])
        make_dir(fx["dir"])
        fx["checksum"] = make_json(fx["json"])
        fx["json_kb"] = os.path.getsize(fx["json"]) // 1000
        with open(fx["json"]) as f:
            fx["json_items"] = len(json.load(f)["items"])
        repo, def_file, def_line, synthetic = pick_repo(args.repo, args.function, tmp)
        fx.update(repo=repo, def_file=def_file, def_line=def_line, def_rel=os.path.relpath(def_file, repo),
                  repo_label="synthetic" if synthetic else repo.replace(os.path.expanduser("~"), "~"),
                  repo_files=sum(len(f) for _, _, f in os.walk(repo)))
        result = {"bin": args.bin, "fixtures": fx}
        result["cut"] = await run_budget(args.bin, tmp, env, fx, enc, None)
        result["uncut"] = await run_budget(args.bin, tmp, env, fx, enc, 0)
    finally:
        if args.keep:
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, indent=1) if args.json else report(result))


if __name__ == "__main__":
    asyncio.run(main())
