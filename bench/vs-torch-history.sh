#!/usr/bin/env bash
# vramtrace side by side with PyTorch's own memory history, on real PyTorch on the simulated
# GPU (tests/simcuda/simgpu; the wheel in .venv/, scripts/install-torch.sh).
#
#   bench/vs-torch-history.sh [BUILD_DIR] [STEPS]      (defaults: build/release 300)
#
# The workload (bench/torch_step.py) is a dispatch-bound training step: kernels cost nothing on
# the simulated GPU, so every step is the dispatcher and the caching allocator, the worst case
# for a recorder. It runs five ways, each timed by wall clock, start-up and finishing included,
# each way once a round, RUNS rounds (default 3), best of the rounds:
#   untraced;
#   under `vramtrace run` with its defaults (every block and segment, native and Python stacks,
#     the trace indexed at the end);
#   under torch.cuda.memory._record_memory_history(stacks="python"), and stacks="all" (Python
#     and C++ frames), which record in the process and write nothing (the snapshot is not taken);
#   for information, under `vramtrace run --ring-size 256MiB`, whose ring holds the whole loop's
#     events so that the program never waits for the collector.
# slowdown = traced / untraced - 1, for the whole run and for the training loop alone (the
# loop's own clock: neither tool's start-up or finishing). The goal: vramtrace's slowdown at
# most half that of stacks="python". The last lines give that ratio within each round too, from
# the round's own runs, with its median and range over the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build/release}"
steps="${2:-300}"
runs="${RUNS:-3}"
python=".venv/bin/python"
vramtrace="$build/bin/vramtrace"
simgpu=(tests/simcuda/simgpu --build "$build" --devices 1)
for tool in "$python" "$vramtrace"; do
  [ -x "$tool" ] || { echo "vs-torch-history: $tool not found" >&2; exit 2; }
done

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# Runs one way once; prints "wall_ns loop_seconds blocks".
measure_once() {
  rm -f "$scratch/t.db"
  local t0 t1 line
  t0=$(date +%s%N)
  line=$("$@" | tail -1)
  t1=$(date +%s%N)
  echo "$line" | "$python" -c \
    'import json,sys; r = json.load(sys.stdin); print(sys.argv[1], r["loop_seconds"], r["blocks"])' \
    $((t1 - t0))
}

workload=(bench/torch_step.py --steps "$steps")
ways=(untraced vramtrace ring python all)
run_way() {
  case "$1" in
    untraced) measure_once "${simgpu[@]}" -- "$python" "${workload[@]}" ;;
    vramtrace) measure_once "${simgpu[@]}" -- "$vramtrace" run -o "$scratch/t.db" --force \
      -- "$python" "${workload[@]}" ;;
    # For information (not the defaults): a ring large enough that the program never waits for
    # the collector during the loop.
    ring) measure_once "${simgpu[@]}" -- "$vramtrace" run -o "$scratch/t.db" --force \
      --ring-size 268435456 -- "$python" "${workload[@]}" ;;
    python) measure_once "${simgpu[@]}" -- "$python" "${workload[@]}" --history python ;;
    all) measure_once "${simgpu[@]}" -- "$python" "${workload[@]}" --history all ;;
  esac
}

# Every way once a round, RUNS rounds, so that the machine's drift falls on all of them alike:
# a line "round way wall_ns loop_seconds blocks" each.
for round in $(seq "$runs"); do
  for way in "${ways[@]}"; do
    echo "$round $way $(run_way "$way")"
  done
done >"$scratch/times"

"$python" - "$steps" "$scratch/times" <<'PY'
import statistics
import sys
steps = int(sys.argv[1])
times = {}  # way -> [(wall_ns, loop_s)] by round
blocks = 0
for line in open(sys.argv[2]):
    _, way, wall, loop, count = line.split()
    times.setdefault(way, []).append((float(wall), float(loop)))
    if way == "untraced":
        blocks = int(count)
best = {way: (min(w for w, _ in t), min(l for _, l in t)) for way, t in times.items()}
u_wall, u_loop = best["untraced"]
def row(name, way):
    wall, loop = best[way]
    ws = wall / u_wall - 1
    ls = loop / u_loop - 1
    print(f"{name:<34} {wall / 1e9:8.2f} s {ws * 100:+8.1f}%   {loop:8.3f} s {ls * 100:+8.1f}%")
    return ws, ls
print(f"{steps} steps, {blocks} block allocations in the loop (simulated GPU), best of"
      f" {len(times['untraced'])} rounds")
print(f"{'':<34} {'whole run':>10} {'slowdown':>9}   {'loop':>10} {'slowdown':>9}")
row("untraced", "untraced")
v = row("vramtrace run (defaults)", "vramtrace")
p = row('_record_memory_history("python")', "python")
a = row('_record_memory_history("all")', "all")
r = row("vramtrace run --ring-size 256MiB (info)", "ring")
for label, index in (("whole run", 0), ("loop", 1)):
    ratio = v[index] / p[index] if p[index] > 0 else float("inf")
    print(f"vramtrace's slowdown / stacks=\"python\"'s, {label}: {ratio:.2f}"
          f" (goal: <= 0.5); / stacks=\"all\"'s: {v[index] / a[index]:.2f};"
          f" with the 256 MiB ring: {r[index] / p[index]:.2f}")
# The same ratio within each round, from that round's own runs: where the machine's speed moves
# more than the tools differ, a best-of ratio far from this median came from one lucky run.
for label, index in (("whole run", 0), ("loop", 1)):
    ratios = []
    for u, vt, py in zip(times["untraced"], times["vramtrace"], times["python"]):
        slowdown_p = py[index] / u[index] - 1
        if slowdown_p > 0:
            ratios.append((vt[index] / u[index] - 1) / slowdown_p)
    if ratios:
        print(f"within each round, vramtrace's slowdown / stacks=\"python\"'s, {label}: median"
              f" {statistics.median(ratios):.2f} ({min(ratios):.2f} to {max(ratios):.2f})")
PY
