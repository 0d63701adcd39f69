#!/usr/bin/env bash
# Runs the cargo-fuzz targets under libFuzzer, one process each (one core), and prints each target's executions
# and time (the figures of docs/SECURITY.md, "Fuzzing").
#
#   scripts/fuzz.sh                 every target, 600 s each
#   scripts/fuzz.sh cut 3600        one target for an hour
#   FUZZ_RUNS=10000000 scripts/fuzz.sh stdio   stop at 10 million executions instead
#   scripts/fuzz.sh cmin [TARGET]   minimise the corpora (`cargo fuzz cmin`), keeping named inputs
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`). New inputs
# that add coverage land in fuzz/corpus/<target>/ (minimise with `scripts/fuzz.sh cmin` before
# committing); a crash lands in fuzz/artifacts/<target>/ and stops the run. No sanitizer by
# default (the code under test is safe Rust; FUZZ_SANITIZER=address to add one). The build
# honours CARGO_TARGET_DIR; on a loaded 2-core machine it takes about an hour.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

targets=(stdio sse config jsonpath read_output front_path cut gateway_wire overrides client_config http_batch stdio_splice)
minimise=false
if [[ "${1:-}" == cmin ]]; then
    minimise=true
    shift
fi
if [[ $# -ge 1 && "$1" != all ]]; then
    targets=("$1")
fi
seconds="${2:-600}"
sanitizer="${FUZZ_SANITIZER:-none}"

cargo +nightly fuzz build -s "$sanitizer"

if $minimise; then
    # `cmin` keeps only inputs that add coverage; the named ones (seeds, regression inputs) stay.
    for target in "${targets[@]}"; do
        named="$(mktemp -d)"
        find "corpus/$target" -regextype posix-extended -type f ! -regex '.*/[0-9a-f]{40}' -exec cp {} "$named/" \;
        before=$(find "corpus/$target" -type f | wc -l)
        cargo +nightly fuzz cmin -s "$sanitizer" "$target" "corpus/$target" >/dev/null 2>&1
        cp -n "$named"/* "corpus/$target/" 2>/dev/null || true
        echo "$target: $before inputs, $(find "corpus/$target" -type f | wc -l) kept"
    done
    exit 0
fi

for target in "${targets[@]}"; do
    log="$(mktemp)"
    start=$(date +%s)
    status=0
    cargo +nightly fuzz run -s "$sanitizer" "$target" "corpus/$target" -- \
        -max_total_time="$seconds" ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} \
        -max_len=65536 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        >"$log" 2>&1 || status=$?
    elapsed=$(( $(date +%s) - start ))
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1)
    if [[ $status -eq 0 ]]; then
        echo "$target: ${runs:-?} executions in ${elapsed}s, clean (${cov:-cov ?})"
    else
        echo "$target: FAILED after ${runs:-?} executions in ${elapsed}s (exit $status): see $log"
        grep -E 'panicked at|ERROR: libFuzzer|Test unit written' "$log" | head -5
    fi
done
