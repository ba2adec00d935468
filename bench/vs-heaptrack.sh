#!/usr/bin/env bash
# vramtrace side by side with heaptrack: two workloads, each untraced and under both tools.
#
#   bench/vs-heaptrack.sh [BUILD_DIR] [N] [D]      (defaults: build/release 200000 16)
#   environment: RUNS (5), BASE (1), STORM_N (1200000), WORKLOADS (both, alloc or storm),
#                BUSY (0; 1: every core kept busy by another process throughout, as a data
#                loader's workers or another job keep a training machine's)
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
# the tools' start-up and finishing included; the runs go in rounds, every configuration once a
# round, so that the machine's drift falls on all of them alike.
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
# sight of the simulated runtime's objects, is not a cost per event). The storm's last line gives
# its two ratios taken within each round, their median and range over the rounds.
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
# BUSY=1: one process per core spinning at the tools' own priority for the whole script. Each
# tool's threads then share every core, so that a tool whose work waits behind the machine's
# other work shows it.
spinners=""
if [ "${BUSY:-0}" = 1 ]; then
  for _ in $(seq "$(nproc)"); do
    sh -c 'while :; do :; done' &
    spinners="$spinners $!"
  done
  echo "busy machine: $(nproc) other processes spinning throughout"
fi
trap 'for pid in $spinners; do kill "$pid" 2>/dev/null; done; rm -rf "$scratch"' EXIT

# Runs the command once, after `prepare`; sets run_ns (its wall time), run_loop_ns (the loop
# time the workload printed, if it did) and run_finish_ns (from the program's last act, as it
# printed it, to the command's return). Its output is kept in $scratch/out and $scratch/err.
timed_run() {
  local prepare="$1"
  shift
  eval "$prepare"
  local t0 t1 exited
  t0=$(date +%s%N)
  "$@" >"$scratch/out" 2>"$scratch/err" || {
    echo "vs-heaptrack: failed: $*" >&2
    cat "$scratch/err" >&2
    exit 1
  }
  t1=$(date +%s%N)
  run_ns=$((t1 - t0))
  run_loop_ns=$(sed -n 's/^loop_ns \([0-9]*\)$/\1/p' "$scratch/out")
  exited=$(sed -n 's/^exit_realtime_ns \([0-9]*\)$/\1/p' "$scratch/out")
  run_finish_ns=$((t1 - ${exited:-$t1}))
}

# Every configuration keeps its best of $runs: the shortest wall time, the shortest loop the
# workload printed, and the finishing of the run with the shortest wall time. The runs go in
# rounds, each configuration once a round, so that the machine's drift during the script falls
# on all of them alike rather than on whichever ran in a slow minute.
declare -A best_wall best_loop best_finish
keep_best() {  # the name of the configuration timed_run just ran
  local name="$1"
  if [ -z "${best_wall[$name]:-}" ] || [ "$run_ns" -lt "${best_wall[$name]}" ]; then
    best_wall[$name]=$run_ns
    best_finish[$name]=$run_finish_ns
  fi
  if [ -n "$run_loop_ns" ] && { [ -z "${best_loop[$name]:-}" ] || [ "$run_loop_ns" -lt "${best_loop[$name]}" ]; }; then
    best_loop[$name]=$run_loop_ns
  fi
}
best_of() {  # prints "wall loop finishing" in nanoseconds
  echo "${best_wall[$1]} ${best_loop[$1]:-0} ${best_finish[$1]}"
}

# One configuration at BASE and at N iterations, the command's last two arguments being the
# iterations and the depth: keeps the best of NAME0 and of NAME.
# Leaves the two runs' wall and loop times in pair_times ("wall0 wall loop0 loop").
timed_pair() {  # name, prepare, iterations, command...
  local name="$1" prepare="$2" iterations="$3" wall0 loop0
  shift 3
  timed_run "$prepare" "$@" "$base" "$d" && keep_best "${name}0"
  wall0=$run_ns loop0=${run_loop_ns:-0}
  timed_run "$prepare" "$@" "$iterations" "$d" && keep_best "$name"
  pair_times="$wall0 $run_ns $loop0 ${run_loop_ns:-0}"
}

heaptrack_calls() {
  heaptrack_print -f "$(ls "$scratch"/ht.*)" -p 0 -a 0 -T 0 -l 0 2>/dev/null |
    sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p'
}

# WORKLOADS=storm runs the storm alone, WORKLOADS=alloc the first workload alone.
workloads="${WORKLOADS:-both}"
if [ "$workloads" != storm ]; then
# vramtrace with its defaults, as a user runs it: the trace indexed when `run` returns (heaptrack
# builds its indexes only when heaptrack_print or the GUI load the file); then, for information,
# --no-index (the first report builds the index), --free-stacks (a stack for every free too:
# heaptrack records none for its frees), every stack walked by libunwind (as before the
# frame-rule walk) and every stack sent whole (as before stack names).
heaptrack_events0="" heaptrack_events=""
declare -A option_bytes
for round in $(seq "$runs"); do
  timed_pair untraced ":" "$n" "$workload"
  timed_run "rm -f $scratch/ht.*" heaptrack -o "$scratch/ht" "$workload" "$base" "$d" &&
    keep_best heaptrack0
  [ -n "$heaptrack_events0" ] || heaptrack_events0=$(heaptrack_calls)
  timed_run "rm -f $scratch/ht.*" heaptrack -o "$scratch/ht" "$workload" "$n" "$d" &&
    keep_best heaptrack
  if [ "$round" -eq 1 ]; then
    heaptrack_events=$(heaptrack_calls)
    heaptrack_bytes=$(stat -c %s "$(ls "$scratch"/ht.*)")
  fi
  timed_pair vramtrace "rm -f $scratch/vt.db*" "$n" "$vramtrace" run -o "$scratch/vt.db" -- "$workload"
  vramtrace_events=$(sqlite3 "$scratch/vt.db" "SELECT count(*) FROM allocation WHERE free_seq IS NOT NULL")
  vramtrace_all=$(sqlite3 "$scratch/vt.db" "SELECT count(*) FROM allocation")
  if [ "$vramtrace_all" -ne "$n" ] || [ "$vramtrace_events" -ne "$n" ]; then
    echo "vs-heaptrack: vramtrace recorded $vramtrace_all allocations ($vramtrace_events freed) of $n" >&2
    exit 1
  fi
  vramtrace_bytes=$(stat -c %s "$scratch/vt.db")
  for option in no-index free-stacks; do
    timed_pair "$option" "rm -f $scratch/vt.db*" "$n" "$vramtrace" run "--$option" -o "$scratch/vt.db" -- "$workload"
    option_bytes[$option]=$(stat -c %s "$scratch/vt.db")
  done
  for setting in VRAMTRACE_UNWINDER=libunwind VRAMTRACE_STACK_NAMES=0; do
    timed_pair "$setting" "rm -f $scratch/vt.db*" "$n" env "$setting" "$vramtrace" run -o "$scratch/vt.db" -- "$workload"
  done
done
wall_of() { echo "${best_wall[$1]}"; }
loop_of() { echo "${best_loop[$1]:-0}"; }
untraced0=$(wall_of untraced0) untraced=$(wall_of untraced)
heaptrack0=$(wall_of heaptrack0) heaptrack_ns=$(wall_of heaptrack)
vramtrace0=$(wall_of vramtrace0) vramtrace_ns=$(wall_of vramtrace)
untraced_loop0=$(loop_of untraced0) untraced_loop=$(loop_of untraced)
heaptrack_loop0=$(loop_of heaptrack0) heaptrack_loop=$(loop_of heaptrack)
vramtrace_loop0=$(loop_of vramtrace0) vramtrace_loop=$(loop_of vramtrace)
no_index0=$(wall_of no-index0) no_index_ns=$(wall_of no-index) no_index_bytes=${option_bytes[no-index]}
free_stacks0=$(wall_of free-stacks0) free_stacks_ns=$(wall_of free-stacks)
free_stacks_bytes=${option_bytes[free-stacks]}
libunwind0=$(wall_of VRAMTRACE_UNWINDER=libunwind0) libunwind_ns=$(wall_of VRAMTRACE_UNWINDER=libunwind)
unnamed0=$(wall_of VRAMTRACE_STACK_NAMES=00) unnamed_ns=$(wall_of VRAMTRACE_STACK_NAMES=0)

ingest_depth=16
if [ "$d" -gt 40 ]; then ingest_depth=64; fi
ingest="(not built)"
if [ -x "$ingest_bench" ]; then
  # Frees without stacks, stacks by name after their first time, SQLite on the writer's own
  # thread: as `vramtrace run` records.
  ingest=$("$ingest_bench" --benchmark_filter="BM_CollectorIngest/$ingest_depth/0/1/1/1/" \
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
  -v x0="$no_index0" -v x="$no_index_ns" -v xb="$no_index_bytes" \
  -v ul="$untraced_loop" -v hl="$heaptrack_loop" -v vl="$vramtrace_loop" \
  -v ul0="$untraced_loop0" -v hl0="$heaptrack_loop0" -v vl0="$vramtrace_loop0" 'BEGIN {
  hd = he - he0; vd = ve - base;  # events between the BASE run and the N run
  ho = ((h - h0) - (u - u0)) / hd; vo = ((v - v0) - (u - u0)) / vd; fo = ((f - f0) - (u - u0)) / vd;
  lo = ((l - l0) - (u - u0)) / vd; no = ((nn - n0) - (u - u0)) / vd; xo = ((x - x0) - (u - u0)) / vd;
  printf "workload: %d iterations at stack depth %d (best of %d runs, wall clock)\n", n, d, runs;
  printf "%-10s %9s %9s %10s %15s %12s %12s\n", "run", "N=" base " (s)", "N (s)", "events", "overhead/event", "trace bytes", "bytes/event";
  printf "%-10s %9.3f %9.3f %10s %15s %12s %12s\n", "untraced", u0 / 1e9, u / 1e9, "-", "-", "-", "-";
  printf "%-10s %9.3f %9.3f %10d %12.0f ns %12d %12.3f\n", "heaptrack", h0 / 1e9, h / 1e9, he, ho, hb, hb / he;
  printf "%-10s %9.3f %9.3f %10d %12.0f ns %12d %12.3f\n", "vramtrace", v0 / 1e9, v / 1e9, ve, vo, vb, vb / ve;
  printf "overhead per event, vramtrace / heaptrack: %.2f\n", vo / ho;
  printf "for information, vramtrace run --no-index: %.0f ns per event (%.2f of heaptrack'"'"'s), %.3f bytes per event\n", xo, xo / ho, xb / ve;
  printf "for information, vramtrace run --free-stacks: %.0f ns per event (%.2f of heaptrack'"'"'s), %.3f bytes per event\n", fo, fo / ho, fb / ve;
  printf "for information, VRAMTRACE_UNWINDER=libunwind: %.0f ns per event (%.2f of heaptrack'"'"'s)\n", lo, lo / ho;
  printf "for information, VRAMTRACE_STACK_NAMES=0: %.0f ns per event (%.2f of heaptrack'"'"'s)\n", no, no / ho;
  hi = ((hl - hl0) - (ul - ul0)) / hd; vi = ((vl - vl0) - (ul - ul0)) / vd;
  printf "inside the program (its loop timed by itself, less its loop at N=%d: no start-up or finishing): heaptrack %.0f ns, vramtrace %.0f ns per event, ratio %.2f\n", base, hi, vi, vi / hi;
  printf "collector ingest (bench, depth %d): %s\n", idepth, ingest;
}'
fi

# The storm (bench/storm_workload.cpp): STORM_N (default 1,200,000) back-to-back
# cudaMalloc/cudaFree pairs at depth D and nothing else, through a stand-in runtime whose
# cudaMalloc is one malloc (bench/malloc_cudart.cpp), so that both tools record one event per
# call. vramtrace runs with its defaults (the trace indexed when `run` returns, as a user gets
# it); `--no-index` is for information. Three costs apart, each per event, less the untraced
# program's, between the BASE run and the STORM_N run: the whole run (start-up apart, finishing
# in), the program's own loop (what the program is slowed by), and the finishing: from the
# program's last act (it prints its clock) to the tool's return, what a user waits for once the
# program is done (absolute, of the STORM_N run).
if [ "$workloads" = alloc ]; then exit 0; fi
storm="$build/bin/vramtrace_storm_workload"
storm_n="${STORM_N:-1200000}"
[ -x "$storm" ] || { echo "vs-heaptrack: $storm not found" >&2; exit 2; }

# SQLite's own floor for one row per allocation, with nothing of vramtrace running: sqlite3
# appends the rows of allocation_compact's 11 integer columns in one transaction (WAL, no
# syncs), without and with the two indexes `run` keeps up. What any design that writes a row per
# allocation pays at least, beside heaptrack's whole cost per event.
floor_sql() {  # rows, then "indexed" or "bare"
  local indexes=""
  if [ "$2" = indexed ]; then
    indexes="CREATE INDEX by_alloc_seq ON a(upid, alloc_seq); CREATE INDEX by_free_seq ON a(upid, alloc_seq + free_seq_delta) WHERE free_seq_delta > 1024 OR free_seq_delta < 1;"
  fi
  echo "PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF;
CREATE TABLE a(id INTEGER PRIMARY KEY, upid, site_id, address, size, size_minus_requested,
  alloc_seq, alloc_ns, free_site_id, free_seq_delta, free_ns_delta); $indexes
BEGIN; INSERT INTO a SELECT value, 1, 1, 140737488355328 + value * 4096, 4096, 16, value * 2,
  1000000 + value * 97, 1, 1, 40 FROM generate_series(1, $1); COMMIT;"
}
floor_sql "$base" bare >"$scratch/floor_bare0.sql"
floor_sql "$storm_n" bare >"$scratch/floor_bare.sql"
floor_sql "$base" indexed >"$scratch/floor_indexed0.sql"
floor_sql "$storm_n" indexed >"$scratch/floor_indexed.sql"

storm_heaptrack_calls0="" storm_heaptrack_calls=""
best_wall=() best_loop=() best_finish=()  # the first workload's bests are not the storm's
# Each round's own times, a line a round: untraced, heaptrack's and vramtrace's (defaults)
# "wall0 wall loop0 loop" each. The ratios of a round are taken within it, where the machine's
# state is the same for all three; their median says how far the best-of ratios can be trusted.
round_times=""
for _ in $(seq "$runs"); do
  timed_pair untraced ":" "$storm_n" "$storm"
  round="$pair_times"
  timed_run "rm -f $scratch/ht.*" heaptrack -o "$scratch/ht" "$storm" "$base" "$d" &&
    keep_best heaptrack0
  heaptrack_times="$run_ns" heaptrack_loop0=${run_loop_ns:-0}
  [ -n "$storm_heaptrack_calls0" ] || storm_heaptrack_calls0=$(heaptrack_calls)
  timed_run "rm -f $scratch/ht.*" heaptrack -o "$scratch/ht" "$storm" "$storm_n" "$d" &&
    keep_best heaptrack
  heaptrack_times="$heaptrack_times $run_ns $heaptrack_loop0 ${run_loop_ns:-0}"
  [ -n "$storm_heaptrack_calls" ] || storm_heaptrack_calls=$(heaptrack_calls)
  timed_pair vramtrace "rm -f $scratch/vt.db*" "$storm_n" "$vramtrace" run -o "$scratch/vt.db" -- "$storm"
  round_times="$round_times$round $heaptrack_times $pair_times
"
  storm_rows=$(sqlite3 "$scratch/vt.db" "SELECT count(*) FROM allocation WHERE free_seq IS NOT NULL")
  if [ "$storm_rows" -ne "$storm_n" ]; then
    echo "vs-heaptrack: the storm's trace holds $storm_rows freed allocations of $storm_n" >&2
    exit 1
  fi
  storm_waited=$(sqlite3 "$scratch/vt.db" "SELECT ifnull(sum(value), 0) FROM stats WHERE name = 'shim_ring_full_wait_ms'")
  timed_pair no_index "rm -f $scratch/vt.db*" "$storm_n" "$vramtrace" run --no-index -o "$scratch/vt.db" -- "$storm"
  for floor in bare0 bare indexed0 indexed; do
    timed_run "rm -f $scratch/floor.db*" sqlite3 "$scratch/floor.db" ".read $scratch/floor_$floor.sql" &&
      keep_best "floor_$floor"
  done
done
storm_untraced0=$(best_of untraced0) storm_untraced=$(best_of untraced)
storm_heaptrack0=$(best_of heaptrack0) storm_heaptrack=$(best_of heaptrack)
storm_vramtrace0=$(best_of vramtrace0) storm_vramtrace=$(best_of vramtrace)
storm_no_index0=$(best_of no_index0) storm_no_index=$(best_of no_index)
floor_bare0=$(best_of floor_bare0) floor_bare=$(best_of floor_bare)
floor_indexed0=$(best_of floor_indexed0) floor_indexed=$(best_of floor_indexed)

awk -v n="$storm_n" -v base="$base" -v d="$d" -v runs="$runs" \
  -v f0="$floor_bare0" -v f="$floor_bare" -v g0="$floor_indexed0" -v g="$floor_indexed" \
  -v u0="$storm_untraced0" -v u="$storm_untraced" -v h0="$storm_heaptrack0" -v h="$storm_heaptrack" \
  -v hc0="$storm_heaptrack_calls0" -v hc="$storm_heaptrack_calls" \
  -v v0="$storm_vramtrace0" -v v="$storm_vramtrace" -v x0="$storm_no_index0" -v x="$storm_no_index" \
  -v waited="$storm_waited" 'BEGIN {
  split(u0, U0, " "); split(u, U, " "); split(h0, H0, " "); split(h, H, " ");
  split(v0, V0, " "); split(v, V, " "); split(x0, X0, " "); split(x, X, " ");
  he = hc - hc0; ve = n - base;  # events between the BASE run and the STORM_N run
  printf "\nstorm: %d back-to-back cudaMalloc/cudaFree pairs at stack depth %d, cudaMalloc = malloc (best of %d runs, wall clock)\n", n, d, runs;
  printf "%-22s %9s %9s %9s %13s %16s %15s\n", "run", "N=" base " (s)", "N (s)", "loop (s)", "finishing (s)", "whole-run/event", "in-loop/event";
  printf "%-22s %9.3f %9.3f %9.3f %13.3f %16s %15s\n", "untraced", U0[1] / 1e9, U[1] / 1e9, U[2] / 1e9, U[3] / 1e9, "-", "-";
  hw = ((H[1] - H0[1]) - (U[1] - U0[1])) / he; hl = ((H[2] - H0[2]) - (U[2] - U0[2])) / he;
  vw = ((V[1] - V0[1]) - (U[1] - U0[1])) / ve; vl = ((V[2] - V0[2]) - (U[2] - U0[2])) / ve;
  xw = ((X[1] - X0[1]) - (U[1] - U0[1])) / ve; xl = ((X[2] - X0[2]) - (U[2] - U0[2])) / ve;
  printf "%-22s %9.3f %9.3f %9.3f %13.3f %13.0f ns %12.0f ns\n", "heaptrack", H0[1] / 1e9, H[1] / 1e9, H[2] / 1e9, H[3] / 1e9, hw, hl;
  printf "%-22s %9.3f %9.3f %9.3f %13.3f %13.0f ns %12.0f ns\n", "vramtrace (defaults)", V0[1] / 1e9, V[1] / 1e9, V[2] / 1e9, V[3] / 1e9, vw, vl;
  printf "%-22s %9.3f %9.3f %9.3f %13.3f %13.0f ns %12.0f ns\n", "vramtrace --no-index", X0[1] / 1e9, X[1] / 1e9, X[2] / 1e9, X[3] / 1e9, xw, xl;
  printf "events: heaptrack %d, vramtrace %d; the program waited %d ms on its full ring (defaults)\n", he, ve, waited;
  printf "storm, defaults, finishing included, per event, vramtrace / heaptrack: %.2f (target at most 1)\n", vw / hw;
  printf "storm, inside the program'"'"'s loop, per event, vramtrace / heaptrack: %.2f (target at most 0.5)\n", vl / hl;
  printf "storm, finishing: vramtrace %.3f s per million allocations, heaptrack %.3f s per million (target at most 0.25 s)\n", V[3] / 1e9 / (n / 1e6), H[3] / 1e9 / (n / 1e6);
  printf "for information, --no-index: %.2f of heaptrack'"'"'s whole run, %.3f s per million finishing\n", xw / hw, X[3] / 1e9 / (n / 1e6);
  split(f0, F0, " "); split(f, F, " "); split(g0, G0, " "); split(g, G, " ");
  fr = (F[1] - F0[1]) / ve; gr = (G[1] - G0[1]) / ve;
  printf "SQLite alone, one row per allocation (sqlite3, no vramtrace): %.0f ns a row (%.2f of heaptrack'"'"'s whole run per event), %.0f ns with run'"'"'s two indexes (%.2f)\n", fr, fr / hw, gr, gr / hw;
}'

# Within each round: the same two ratios from that round's own runs, their median and range
# over the rounds. A best-of ratio far from this median was made by one lucky run of either tool.
printf '%s' "$round_times" >"$scratch/rounds"
awk -v n="$storm_n" -v base="$base" -v hc0="$storm_heaptrack_calls0" -v hc="$storm_heaptrack_calls" '
  NF == 12 {
    he = hc - hc0; ve = n - base;
    hw = (($6 - $5) - ($2 - $1)) / he; vw = (($10 - $9) - ($2 - $1)) / ve;
    hl = (($8 - $7) - ($4 - $3)) / he; vl = (($12 - $11) - ($4 - $3)) / ve;
    if (hw > 0 && hl > 0) { whole[++rounds] = vw / hw; loop[rounds] = vl / hl }
  }
  function sort(a, k,   i, j, t) {
    for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
  }
  function median(a, k) { return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2 }
  END {
    if (rounds == 0) exit;
    sort(whole, rounds); sort(loop, rounds);
    printf "storm, within each round (%d rounds), vramtrace / heaptrack: whole run median %.2f (%.2f-%.2f), in the loop median %.2f (%.2f-%.2f)\n", rounds, median(whole, rounds), whole[1], whole[rounds], median(loop, rounds), loop[1], loop[rounds];
  }' "$scratch/rounds"
