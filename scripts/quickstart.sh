#!/usr/bin/env bash
# README's first command: build mcp-launch, make sure the example stack's launchers exist
# (npx from Node.js; uvx from uv, installed into .deps/venv-tools when missing), then preflight
# the example stack (mcp_configs/example.json): every server checked in parallel.
#
# The first run downloads the servers through npx/uvx; that cold start is what the slow
# handshake window is for, so it is widened to 120 s here (MCP_INIT_TIMEOUT_SEC).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

command -v npx >/dev/null || { echo "error: npx not found; install Node.js 18+ (it brings npm and npx)" >&2; exit 2; }
if ! command -v uvx >/dev/null; then
  if [[ ! -x .deps/venv-tools/bin/uvx ]]; then
    echo "==> installing uv into .deps/venv-tools (for uvx)"
    python3 -m venv .deps/venv-tools
    .deps/venv-tools/bin/pip install --quiet --disable-pip-version-check uv
  fi
  export PATH="$ROOT/.deps/venv-tools/bin:$PATH"
fi

echo "==> building mcp-launch (release)"
cargo build --release --quiet
echo "==> mcp-launch --config mcp_configs/example.json list"
export MCP_INIT_TIMEOUT_SEC="${MCP_INIT_TIMEOUT_SEC:-120}"
exec target/release/mcp-launch --config mcp_configs/example.json list "$@"
