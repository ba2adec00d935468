#!/usr/bin/env bash
# Trace bytes per allocation (the target: at most 40 at 10 million events).
#
#   bench/trace_size.sh [BUILD_DIR] [N] [D]      (defaults: build/release 10000000 16)
#
# Records the side-by-side workload (bench/alloc_workload.cpp: N cudaMalloc/cudaFree pairs on
# the simulated GPU, at stack depth D) twice: with `vramtrace run --no-index`, the recording
# alone, and with the default `run`, which then builds the allocation indexes and the time
# index for the reports. Prints each file's bytes per allocation, and where they go by table
# and index (SQLite's dbstat), per allocation.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build/release}"
n="${2:-10000000}"
d="${3:-16}"
workload="$build/bin/vramtrace_alloc_workload"
vramtrace="$build/bin/vramtrace"
for tool in "$workload" "$vramtrace" sqlite3; do
  command -v "$tool" >/dev/null || { echo "trace_size: $tool not found" >&2; exit 2; }
done

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

for mode in --no-index default; do
  trace="$scratch/$mode.db"
  args=(run -o "$trace")
  [ "$mode" = default ] || args+=("$mode")
  t0=$(date +%s%N)
  "$vramtrace" "${args[@]}" -- "$workload" "$n" "$d" >/dev/null 2>"$scratch/err" || {
    echo "trace_size: the recording failed" >&2
    cat "$scratch/err" >&2
    exit 1
  }
  t1=$(date +%s%N)
  allocations=$(sqlite3 "$trace" "SELECT count(*) FROM allocation")
  if [ "$allocations" -ne "$n" ]; then
    echo "trace_size: $allocations allocations recorded of $n" >&2
    exit 1
  fi
  bytes=$(stat -c %s "$trace")
  echo "run $mode: $bytes bytes, $(awk -v b="$bytes" -v n="$n" 'BEGIN { printf "%.1f", b / n }') bytes per allocation, $(awk -v t="$((t1 - t0))" 'BEGIN { printf "%.2f", t / 1e9 }') s"
  sqlite3 "$trace" "SELECT '  ' || name || ': ' || printf('%.1f', sum(pgsize) * 1.0 / $n) FROM dbstat
                    GROUP BY name HAVING sum(pgsize) * 1.0 / $n >= 0.05 ORDER BY sum(pgsize) DESC"
done
