#!/usr/bin/env bash
# Runs each libFuzzer target (tests/fuzz, built by the fuzz preset) for SECONDS (default 50)
# from the seed corpus in tests/fuzz/corpus. New inputs go to build/fuzz/corpus/, never into
# the repository; a finding is saved under build/fuzz/artifacts/ and fails the script.
# CI (scripts/test.sh) runs it with the default: under two minutes for both. docs/fuzzing.md
# says how to run it longer.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-50}"
bin=build/fuzz/bin
mkdir -p build/fuzz/artifacts
for target in ring trace_reader; do
  work="build/fuzz/corpus/$target"
  mkdir -p "$work"
  echo "== fuzz $target: ${seconds}s =="
  "$bin/vramtrace_${target}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/${target}-" \
    "$work" "tests/fuzz/corpus/$target"
done
