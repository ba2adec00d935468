#!/bin/sh
# Wall time and peak RSS of `leaks`, `gate` and `peak` where their memory could follow the
# allocations: every allocation leaked from one stack. Method and the last numbers:
# docs/performance.md.
#
#   bench/report_memory.sh BUILD_DIR [N]
#
# Writes two traces of N allocations (default 5000000) with bench/synthetic_trace_generator.cpp
# when they do not exist yet, in ${TMPDIR:-/tmp}: blocks of a caching allocator in its segments
# (as a PyTorch program that keeps every tensor looks) and plain device allocations. Indexes each
# as `vramtrace run` leaves a trace (one `timeline`), then runs each report three times and
# prints the best wall time and the largest peak RSS of the three.
set -eu
build=${1:?usage: bench/report_memory.sh BUILD_DIR [N]}
allocations=${2:-5000000}
vramtrace="$build/bin/vramtrace"
generator="$build/bin/vramtrace_trace_generator"
folder=${TMPDIR:-/tmp}
times=$(mktemp)
trap 'rm -f "$times"' EXIT

# One run: its wall time and peak RSS appended to $times. gate exits 1 when a limit is broken,
# which is what it is asked here; any other failure stops the script.
run_once() {
  status=0
  /usr/bin/time -a -o "$times" -f "%e %M" "$@" > /dev/null || status=$?
  if [ "$status" -gt 1 ]; then
    echo "report_memory.sh: '$*' failed ($status)" >&2
    exit "$status"
  fi
}

measure() {  # label, then the command
  label=$1
  shift
  : > "$times"
  for run in 1 2 3; do run_once "$@"; done
  # /usr/bin/time also writes a line of its own for a command that exits non-zero.
  grep -E '^[0-9.]+ [0-9]+$' "$times" | sort -n | awk -v label="$label" '
    NR == 1 { best = $1 }
    { if ($2 > rss) rss = $2 }
    END { printf "%s: %.2f s wall (best of 3), %d KiB peak RSS (most of 3)\n", label, best, rss }'
}

for shape in blocks device; do
  trace="$folder/vramtrace-leak-$shape-$allocations.db"
  if [ ! -e "$trace" ]; then
    /usr/bin/time -f "generate $allocations $shape: %e s" \
      "$generator" "$trace" --allocations "$allocations" --leak-from-one-stack "$shape" > /dev/null
    /usr/bin/time -f "index it (timeline): %e s, %M KiB" \
      "$vramtrace" timeline "$trace" --buckets 100 > /dev/null
  fi
  ls -l "$trace"
  measure "$shape: leaks" "$vramtrace" leaks "$trace"
  measure "$shape: leaks --format json" "$vramtrace" leaks "$trace" --format json
  measure "$shape: gate" "$vramtrace" gate "$trace"
  measure "$shape: gate --max-leaked-bytes 0 --max-peak 1GiB" \
    "$vramtrace" gate "$trace" --max-leaked-bytes 0 --max-peak 1GiB
  measure "$shape: peak" "$vramtrace" peak "$trace"
  measure "$shape: peak --format json" "$vramtrace" peak "$trace" --format json
done
