#!/usr/bin/env bash
# vramtrace side by side with PyTorch's own memory history, on real PyTorch on the simulated
# GPU (tests/simcuda/simgpu; the wheel in .venv/, scripts/install-torch.sh).
#
#   bench/vs-torch-history.sh [BUILD_DIR] [STEPS]      (defaults: build/release 300)
#
# The workload (bench/torch_step.py) is a dispatch-bound training step: kernels cost nothing on
# the simulated GPU, so every step is the dispatcher and the caching allocator, the worst case
# for a recorder. It runs four ways, each timed by wall clock, start-up and finishing included,
# best of RUNS (default 3):
#   untraced;
#   under `vramtrace run` with its defaults (every block and segment, native and Python stacks,
#     the trace indexed at the end);
#   under torch.cuda.memory._record_memory_history(stacks="python"), and stacks="all" (Python
#     and C++ frames), which record in the process and write nothing (the snapshot is not taken);
#   for information, under `vramtrace run --ring-size 256MiB`, whose ring holds the whole loop's
#     events so that the program never waits for the collector.
# slowdown = traced / untraced - 1, for the whole run and for the training loop alone (the
# loop's own clock: neither tool's start-up or finishing). The goal: vramtrace's slowdown at
# most half that of stacks="python".
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

# Runs one way $runs times; prints "best_wall_ns best_loop_seconds blocks".
measure() {
  local best_wall="" best_loop="" blocks=""
  for _ in $(seq "$runs"); do
    rm -f "$scratch/t.db"
    local t0 t1 line
    t0=$(date +%s%N)
    line=$("$@" | tail -1)
    t1=$(date +%s%N)
    local wall=$((t1 - t0))
    local loop
    loop=$(echo "$line" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["loop_seconds"])')
    blocks=$(echo "$line" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["blocks"])')
    if [ -z "$best_wall" ] || [ "$wall" -lt "$best_wall" ]; then best_wall=$wall; fi
    if [ -z "$best_loop" ] || "$python" -c "import sys; sys.exit(0 if $loop < $best_loop else 1)"; then
      best_loop=$loop
    fi
  done
  echo "$best_wall $best_loop $blocks"
}

workload=(bench/torch_step.py --steps "$steps")
read -r u_wall u_loop u_blocks < <(measure "${simgpu[@]}" -- "$python" "${workload[@]}")
read -r v_wall v_loop _ < <(measure "${simgpu[@]}" -- "$vramtrace" run -o "$scratch/t.db" --force \
  -- "$python" "${workload[@]}")
# For information (not the defaults): a ring large enough that the program never waits for the
# collector during the loop.
read -r r_wall r_loop _ < <(measure "${simgpu[@]}" -- "$vramtrace" run -o "$scratch/t.db" --force \
  --ring-size 268435456 -- "$python" "${workload[@]}")
read -r p_wall p_loop _ < <(measure "${simgpu[@]}" -- "$python" "${workload[@]}" --history python)
read -r a_wall a_loop _ < <(measure "${simgpu[@]}" -- "$python" "${workload[@]}" --history all)

"$python" - "$steps" "$u_blocks" "$u_wall" "$u_loop" "$v_wall" "$v_loop" "$p_wall" "$p_loop" \
  "$a_wall" "$a_loop" "$r_wall" "$r_loop" <<'PY'
import sys
steps, blocks = int(sys.argv[1]), int(sys.argv[2])
u_wall, u_loop, v_wall, v_loop, p_wall, p_loop, a_wall, a_loop, r_wall, r_loop = map(
    float, sys.argv[3:])
def row(name, wall, loop):
    ws = wall / u_wall - 1
    ls = loop / u_loop - 1
    print(f"{name:<34} {wall / 1e9:8.2f} s {ws * 100:+8.1f}%   {loop:8.3f} s {ls * 100:+8.1f}%")
    return ws, ls
print(f"{steps} steps, {blocks} block allocations in the loop (simulated GPU)")
print(f"{'':<34} {'whole run':>10} {'slowdown':>9}   {'loop':>10} {'slowdown':>9}")
row("untraced", u_wall, u_loop)
v = row("vramtrace run (defaults)", v_wall, v_loop)
p = row('_record_memory_history("python")', p_wall, p_loop)
a = row('_record_memory_history("all")', a_wall, a_loop)
r = row("vramtrace run --ring-size 256MiB (info)", r_wall, r_loop)
for label, index in (("whole run", 0), ("loop", 1)):
    ratio = v[index] / p[index] if p[index] > 0 else float("inf")
    print(f"vramtrace's slowdown / stacks=\"python\"'s, {label}: {ratio:.2f}"
          f" (goal: <= 0.5); / stacks=\"all\"'s: {v[index] / a[index]:.2f};"
          f" with the 256 MiB ring: {r[index] / p[index]:.2f}")
PY
