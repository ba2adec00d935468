#!/bin/sh
# Times the time-indexed reports on a large synthetic trace: wall time and peak RSS of each
# command, as /usr/bin/time measures them. Method and the last numbers: docs/performance.md.
#
#   bench/time_queries.sh BUILD_DIR [TRACE [ALLOCATIONS]]
#
# Writes TRACE (default /tmp/vramtrace-bench-10M.db) with bench/synthetic_trace_generator.cpp
# when it does not exist yet, then runs: the first open (which builds the time index into the
# trace), and each report three times on the indexed trace.
set -eu
build=${1:?usage: bench/time_queries.sh BUILD_DIR [TRACE [ALLOCATIONS]]}
trace=${2:-/tmp/vramtrace-bench-10M.db}
allocations=${3:-10000000}
vramtrace="$build/bin/vramtrace"
generator="$build/bin/vramtrace_trace_generator"

measure() {  # label, then the command
  label=$1
  shift
  /usr/bin/time -f "$label: %e s wall, %M KiB peak RSS" "$@" > /dev/null
}

if [ ! -e "$trace" ]; then
  measure "generate $allocations allocations" "$generator" "$trace" --allocations "$allocations"
fi
ls -l "$trace"
measure "first open: build the time index (timeline)" "$vramtrace" timeline "$trace" --buckets 2000
ls -l "$trace"
# frag maps one process: the first one.
pid=$("$vramtrace" peak "$trace" --format json | sed -n 's/.*"pid": \([0-9]*\).*/\1/p' | head -n 1)
for run in 1 2 3; do
  measure "leaks" "$vramtrace" leaks "$trace"
  measure "timeline --buckets 2000" "$vramtrace" timeline "$trace" --buckets 2000
  measure "timeline --buckets 2000 --format json" "$vramtrace" timeline "$trace" --buckets 2000 --format json
  measure "frag --at peak --pid $pid" "$vramtrace" frag "$trace" --at peak --pid "$pid"
  measure "frag --at +5s --pid $pid" "$vramtrace" frag "$trace" --at +5s --pid "$pid"
  measure "peak" "$vramtrace" peak "$trace"
  measure "leaks --growth iteration" "$vramtrace" leaks "$trace" --growth iteration
done
