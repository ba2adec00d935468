#!/bin/sh
# Wall time and peak RSS of the reports whose output grows with the trace: `summary` of a job of
# many processes, and `export` of many allocations. Method and the last numbers:
# docs/performance.md ("Reports that write as much as the trace holds").
#
#   bench/output_memory.sh BUILD_DIR [PROCESSES] [ALLOCATIONS]
#
# Writes, with bench/synthetic_trace_generator.cpp, when they do not exist yet in
# ${TMPDIR:-/tmp}: a trace of PROCESSES processes (default 100000) of two leaked device
# allocations each, and one of ALLOCATIONS allocations (default 3000000) of a two-process
# training loop. Indexes each as `vramtrace run` leaves a trace (one `timeline`), then runs each
# command RUNS times (default 1) and prints the best wall time and the largest peak RSS.
set -eu
build=${1:?usage: bench/output_memory.sh BUILD_DIR [PROCESSES] [ALLOCATIONS]}
processes=${2:-100000}
allocations=${3:-3000000}
runs=${RUNS:-1}
vramtrace="$build/bin/vramtrace"
generator="$build/bin/vramtrace_trace_generator"
folder=${TMPDIR:-/tmp}
times=$(mktemp)
out=$(mktemp -d)
trap 'rm -rf "$times" "$out"' EXIT

measure() {  # label, then the command
  label=$1
  shift
  : > "$times"
  run=0
  while [ "$run" -lt "$runs" ]; do
    rm -f "$out"/*
    /usr/bin/time -a -o "$times" -f "%e %M" "$@" > /dev/null
    run=$((run + 1))
  done
  sort -n "$times" | awk -v label="$label" -v runs="$runs" '
    NR == 1 { best = $1 }
    { if ($2 > rss) rss = $2 }
    END { printf "%s: %.2f s wall (best of %d), %d KiB peak RSS (most of %d)\n", label, best, runs, rss, runs }'
}

prepare() {  # trace, then the generator's options
  trace=$1
  shift
  if [ ! -e "$trace" ]; then
    "$generator" "$trace" "$@" > /dev/null
    "$vramtrace" timeline "$trace" --buckets 100 > /dev/null
  fi
  ls -l "$trace"
}

many="$folder/vramtrace-processes-$processes.db"
prepare "$many" --allocations $((processes * 2)) --processes "$processes" \
  --leak-from-one-stack device
measure "$processes processes: summary" "$vramtrace" summary "$many"
measure "$processes processes: summary --format json" "$vramtrace" summary "$many" --format json

long="$folder/vramtrace-allocations-$allocations.db"
prepare "$long" --allocations "$allocations"
measure "$allocations allocations: export --chrome" \
  "$vramtrace" export "$long" --chrome "$out/trace.json"
measure "$allocations allocations: export --perfetto" \
  "$vramtrace" export "$long" --perfetto "$out/trace.pftrace"
measure "$allocations allocations: export --perfetto --no-allocation-events" \
  "$vramtrace" export "$long" --perfetto "$out/trace.pftrace" --no-allocation-events
measure "$allocations allocations: export --memory-viz (rank 0, half the allocations)" \
  "$vramtrace" export "$long" --memory-viz "$out/snapshot.pickle" --rank 0
