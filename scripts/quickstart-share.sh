#!/usr/bin/env bash
# The quickstart's last step: share a stack and call its /mcp the way a hosted client would,
# without the internet.
#
# Usage: scripts/quickstart-share.sh BIN CONFIG TOOL
#
# `BIN up --config CONFIG --tunnel quick --mode full` runs behind a stand-in for cloudflared
# (full mode: TOOL is called by its own name; auto mode turns sparse once the tool index knows
# the stack's tools and they pass 8,000 tokens, and a sparse gateway lists only its meta-tools)
# (tests/fixtures/fake_cloudflared.py: no network; its "edge" passes requests on with the public
# Host, as Cloudflare's does), so /mcp is protected by OAuth at the https://…trycloudflare.com
# URL. The official Python MCP SDK (.deps/venv-sdk, from scripts/install-test-deps.sh) then logs
# in through that edge — discovery, registration, consent given by `auth approve` as you would,
# token — lists the tools, calls TOOL with {"message": "hi"}, refreshes its token and calls again.
# Its OAuth state lives in a scratch directory, not yours. Exits 0 when the client got through.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$1" CONFIG="$(realpath "$2")" TOOL="$3"
PY="$ROOT/.deps/venv-sdk/bin/python"
if [[ ! -x "$PY" ]]; then
  echo "(skipped: the Python MCP SDK is not installed; scripts/install-test-deps.sh installs it)"
  exit 0
fi

umask 077
WORK="$(mktemp -d)"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
EDGE="127.0.0.1:$(free_port)"
HOST="quickstart-shared-stack.trycloudflare.com"
export XDG_STATE_HOME="$WORK/state"
cd "$WORK"
echo "==> mcp-launch up --config $(basename "$CONFIG") --tunnel quick --mode full   (a stand-in for cloudflared)"
MCP_LAUNCH_CLOUDFLARED="$ROOT/tests/fixtures/fake_cloudflared.py" FAKE_CLOUDFLARED_HOSTNAME="$HOST" \
  FAKE_CLOUDFLARED_EDGE="$EDGE" "$BIN" up --config "$CONFIG" --tunnel quick --mode full --json >up.json 2>up.log &
UP=$!
trap '"$BIN" down >/dev/null 2>&1 || true; kill "$UP" 2>/dev/null || true; cd /; rm -rf "$WORK"' EXIT
for _ in $(seq 1 900); do
  [[ -s up.json ]] && python3 -c 'import json,sys; json.load(open("up.json"))' 2>/dev/null && break
  kill -0 "$UP" 2>/dev/null || { cat up.log >&2; echo "error: up exited early (log above)" >&2; exit 1; }
  sleep 0.2
done
MCP_URL="$(python3 -c 'import json; print(json.load(open("up.json"))["stacks"][0]["mcp_url"])')"
"$BIN" share
echo "==> the Python SDK's OAuth client logs in to $MCP_URL and calls $TOOL"
MCP_LAUNCH_TEST_EDGE="$EDGE" "$PY" "$ROOT/tests/fixtures/oauth_client.py" "$MCP_URL" "$BIN" "$TOOL" \
  | python3 -c '
import json, sys
seen = json.load(sys.stdin)
first, second = not seen["first_call_error"], not seen["second_call_error"]
print(f"   tools listed: {len(seen['"'"'tools'"'"'])}; call ok: {first}; after a token refresh: {second}")
sys.exit(not (first and second))'
echo "==> what up said (the consent request it showed)"
grep -A2 "asks for" up.log || true
