#!/usr/bin/env bash
# The project's test command: install test servers, check formatting and lints, run the tests.
# Stops at the first failing step and exits with that step's exit code.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

step() {
  echo "==> $*"
  local rc=0
  "$@" || rc=$?
  if ((rc != 0)); then
    echo "==> FAILED (exit $rc): $*"
    exit "$rc"
  fi
}

step bash scripts/install-test-deps.sh
step cargo fmt --all -- --check
step cargo clippy --all-targets -- -D warnings
step cargo test --all-targets
echo "==> all steps passed"
