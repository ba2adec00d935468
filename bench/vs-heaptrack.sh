#!/usr/bin/env bash
# vramtrace side by side with heaptrack (issue #9): one workload, three runs.
#
#   bench/vs-heaptrack.sh [BUILD_DIR] [N] [D]      (defaults: build/release 200000 16)
#
# The workload (bench/alloc_workload.cpp) makes N iterations, each at stack depth D, of one
# malloc/free pair and one cudaMalloc/cudaFree pair on the simulated GPU (tests/simcuda),
# whose runtime itself calls malloc a few times per call. It runs untraced, under heaptrack
# (which records every malloc and free, with a stack per malloc) and under `vramtrace run`
# (which records every cudaMalloc and cudaFree, with a stack per cudaMalloc: frees carry none
# unless --free-stacks; stacks walked by frame rules, libunwind for those the walk declines;
# each thread sends a stack whole once, then by name).
# Each is timed, wall clock,
# best of RUNS (default 5: fewer varied by a tenth of the ratio on the shared 2-core machine),
# the tools' start-up and finishing included.
#
# An event is one allocation with its free, as each tool counts them: heaptrack's "calls to
# allocation functions", vramtrace's allocation rows. Each command also runs with BASE
# iterations (default 1), to tell the tool's fixed cost from its cost per event: start-up,
# finishing the file, and the first sight of the program's objects (each tool reads the symbols
# and line tables of every object its stacks point into once: libc's debug file, where
# installed, is megabytes of compressed DWARF). BASE=0 leaves that first reading in the cost
# per event of vramtrace, whose program makes no allocation it records before its loop, but not
# in heaptrack's, whose program mallocs before its loop.
# overhead per event = ((traced(N) - traced(BASE)) - (untraced(N) - untraced(BASE))) / events,
# events counted between the two runs. Trace bytes per event = the tool's output file / events. The
# collector's sustained ingest rate comes from bench/collector_ingest_bench.cpp at the nearest
# depth it runs (16 or 64), in records (an allocation or a free) per second. The workload also
# times its own loop ("loop_ns"): the last line but one compares what each tool adds inside the
# program, per event, without either tool's start-up and finishing (best of the same runs, less
# the loop of the BASE run: the first iteration's one-time work, such as heaptrack's first
# sight of the simulated runtime's objects, is not a cost per event).
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build/release}"
n="${2:-200000}"
d="${3:-16}"
runs="${RUNS:-5}"
base="${BASE:-1}"
workload="$build/bin/vramtrace_alloc_workload"
vramtrace="$build/bin/vramtrace"
ingest_bench="$build/bin/vramtrace_collector_bench"
for tool in "$workload" "$vramtrace" heaptrack heaptrack_print sqlite3; do
  command -v "$tool" >/dev/null || { echo "vs-heaptrack: $tool not found" >&2; exit 2; }
done

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# Best wall time of $runs runs of the command, in nanoseconds; its output is kept in
# $scratch/out and $scratch/err (the last run's). `prepare` runs before each run.
best_ns() {
  local prepare="$1"
  shift
  local best=""
  for _ in $(seq "$runs"); do
    eval "$prepare"
    local t0 t1
    t0=$(date +%s%N)
    "$@" >"$scratch/out" 2>"$scratch/err" || {
      echo "vs-heaptrack: failed: $*" >&2
      cat "$scratch/err" >&2
      exit 1
    }
    t1=$(date +%s%N)
    if [ -z "$best" ] || [ $((t1 - t0)) -lt "$best" ]; then best=$((t1 - t0)); fi
    sed -n 's/^loop_ns \([0-9]*\)$/\1/p' "$scratch/out" >>"$scratch/loops"
  done
  echo "$best"
}

# The shortest loop time the workload printed in the runs since the last call (its own loop,
# timed inside the program: no start-up, no finishing).
best_loop_ns() {
  sort -n "$scratch/loops" | head -1
  rm -f "$scratch/loops"
}

untraced0=$(best_ns ":" "$workload" "$base" "$d")
untraced_loop0=$(best_loop_ns)
heaptrack0=$(best_ns "rm -f $scratch/ht.*" heaptrack -o "$scratch/ht" "$workload" "$base" "$d")
heaptrack_loop0=$(best_loop_ns)
heaptrack_events0=$(heaptrack_print -f "$(ls "$scratch"/ht.*)" -p 0 -a 0 -T 0 -l 0 2>/dev/null |
  sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p')
# --no-index: the time index that `run` builds at the end is a cache for the reports (heaptrack
# builds its own when heaptrack_print or the GUI load the file); recording is what is compared.
vramtrace0=$(best_ns "rm -f $scratch/vt.db*" "$vramtrace" run --no-index -o "$scratch/vt.db" -- "$workload" "$base" "$d")
vramtrace_loop0=$(best_loop_ns)
untraced=$(best_ns ":" "$workload" "$n" "$d")
untraced_loop=$(best_loop_ns)
heaptrack_ns=$(best_ns "rm -f $scratch/ht.*" heaptrack -o "$scratch/ht" "$workload" "$n" "$d")
heaptrack_loop=$(best_loop_ns)
heaptrack_file=$(ls "$scratch"/ht.*)
heaptrack_events=$(heaptrack_print -f "$heaptrack_file" -p 0 -a 0 -T 0 -l 0 2>/dev/null |
  sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p')
vramtrace_ns=$(best_ns "rm -f $scratch/vt.db*" "$vramtrace" run --no-index -o "$scratch/vt.db" -- "$workload" "$n" "$d")
vramtrace_loop=$(best_loop_ns)
vramtrace_events=$(sqlite3 "$scratch/vt.db" "SELECT count(*) FROM allocation WHERE free_seq IS NOT NULL")
vramtrace_all=$(sqlite3 "$scratch/vt.db" "SELECT count(*) FROM allocation")
if [ "$vramtrace_all" -ne "$n" ] || [ "$vramtrace_events" -ne "$n" ]; then
  echo "vs-heaptrack: vramtrace recorded $vramtrace_all allocations ($vramtrace_events freed) of $n" >&2
  exit 1
fi
heaptrack_bytes=$(stat -c %s "$heaptrack_file")
vramtrace_bytes=$(stat -c %s "$scratch/vt.db")
# For information: with a stack for every free too (heaptrack records none for its frees).
free_stacks0=$(best_ns "rm -f $scratch/vt.db*" "$vramtrace" run --no-index --free-stacks -o "$scratch/vt.db" -- "$workload" "$base" "$d")
free_stacks_ns=$(best_ns "rm -f $scratch/vt.db*" "$vramtrace" run --no-index --free-stacks -o "$scratch/vt.db" -- "$workload" "$n" "$d")
free_stacks_bytes=$(stat -c %s "$scratch/vt.db")
# For information: every stack walked by libunwind, as before the frame-rule walk.
libunwind0=$(best_ns "rm -f $scratch/vt.db*" env VRAMTRACE_UNWINDER=libunwind "$vramtrace" run --no-index -o "$scratch/vt.db" -- "$workload" "$base" "$d")
libunwind_ns=$(best_ns "rm -f $scratch/vt.db*" env VRAMTRACE_UNWINDER=libunwind "$vramtrace" run --no-index -o "$scratch/vt.db" -- "$workload" "$n" "$d")
# For information: every stack sent whole, as before stack names.
unnamed0=$(best_ns "rm -f $scratch/vt.db*" env VRAMTRACE_STACK_NAMES=0 "$vramtrace" run --no-index -o "$scratch/vt.db" -- "$workload" "$base" "$d")
unnamed_ns=$(best_ns "rm -f $scratch/vt.db*" env VRAMTRACE_STACK_NAMES=0 "$vramtrace" run --no-index -o "$scratch/vt.db" -- "$workload" "$n" "$d")

ingest_depth=16
if [ "$d" -gt 40 ]; then ingest_depth=64; fi
ingest="(not built)"
if [ -x "$ingest_bench" ]; then
  # Frees without stacks, stacks by name after their first time: as `vramtrace run` records.
  ingest=$("$ingest_bench" --benchmark_filter="BM_CollectorIngest/$ingest_depth/0/1/" \
    --benchmark_min_time=1 --benchmark_format=json 2>/dev/null |
    python3 -c 'import json,sys; b=json.load(sys.stdin)["benchmarks"][0]; print("%.2f M records/s" % (b["items_per_second"]/1e6))')
fi

awk -v u0="$untraced0" -v h0="$heaptrack0" -v v0="$vramtrace0" \
  -v n="$n" -v d="$d" -v u="$untraced" -v h="$heaptrack_ns" -v he="$heaptrack_events" \
  -v base="$base" -v he0="$heaptrack_events0" \
  -v v="$vramtrace_ns" -v ve="$vramtrace_events" -v hb="$heaptrack_bytes" -v vb="$vramtrace_bytes" \
  -v ingest="$ingest" -v idepth="$ingest_depth" -v runs="$runs" \
  -v f0="$free_stacks0" -v f="$free_stacks_ns" -v fb="$free_stacks_bytes" \
  -v l0="$libunwind0" -v l="$libunwind_ns" -v n0="$unnamed0" -v nn="$unnamed_ns" \
  -v ul="$untraced_loop" -v hl="$heaptrack_loop" -v vl="$vramtrace_loop" \
  -v ul0="$untraced_loop0" -v hl0="$heaptrack_loop0" -v vl0="$vramtrace_loop0" 'BEGIN {
  hd = he - he0; vd = ve - base;  # events between the BASE run and the N run
  ho = ((h - h0) - (u - u0)) / hd; vo = ((v - v0) - (u - u0)) / vd; fo = ((f - f0) - (u - u0)) / vd;
  lo = ((l - l0) - (u - u0)) / vd; no = ((nn - n0) - (u - u0)) / vd;
  printf "workload: %d iterations at stack depth %d (best of %d runs, wall clock)\n", n, d, runs;
  printf "%-10s %9s %9s %10s %15s %12s %12s\n", "run", "N=" base " (s)", "N (s)", "events", "overhead/event", "trace bytes", "bytes/event";
  printf "%-10s %9.3f %9.3f %10s %15s %12s %12s\n", "untraced", u0 / 1e9, u / 1e9, "-", "-", "-", "-";
  printf "%-10s %9.3f %9.3f %10d %12.0f ns %12d %12.3f\n", "heaptrack", h0 / 1e9, h / 1e9, he, ho, hb, hb / he;
  printf "%-10s %9.3f %9.3f %10d %12.0f ns %12d %12.3f\n", "vramtrace", v0 / 1e9, v / 1e9, ve, vo, vb, vb / ve;
  printf "overhead per event, vramtrace / heaptrack: %.2f\n", vo / ho;
  printf "for information, vramtrace run --free-stacks: %.0f ns per event (%.2f of heaptrack'"'"'s), %.3f bytes per event\n", fo, fo / ho, fb / ve;
  printf "for information, VRAMTRACE_UNWINDER=libunwind: %.0f ns per event (%.2f of heaptrack'"'"'s)\n", lo, lo / ho;
  printf "for information, VRAMTRACE_STACK_NAMES=0: %.0f ns per event (%.2f of heaptrack'"'"'s)\n", no, no / ho;
  hi = ((hl - hl0) - (ul - ul0)) / hd; vi = ((vl - vl0) - (ul - ul0)) / vd;
  printf "inside the program (its loop timed by itself, less its loop at N=%d: no start-up or finishing): heaptrack %.0f ns, vramtrace %.0f ns per event, ratio %.2f\n", base, hi, vi, vi / hi;
  printf "collector ingest (bench, depth %d): %s\n", idepth, ingest;
}'
