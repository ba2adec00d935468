#!/usr/bin/env bash
# A long run against a ten times shorter one: how the trace and the collector grow with the
# length of a steady loop (a training job's shape), with `vramtrace run`'s defaults.
#
#   bench/long_run.sh [BUILD_DIR] [N] [STEPS] [WHICH]
#
# (defaults: build/release 1000000 3000 both; WHICH: native, torch or both)
#
# Two workloads, each recorded at its short and its ten times longer length:
#   native: the storm of bench/vs-heaptrack.sh (N and 10 N cudaMalloc/cudaFree pairs at stack
#     depth 16, bench/storm_workload.cpp), a native steady-state loop;
#   torch:  bench/torch_step.py, STEPS and 10 STEPS training steps of real PyTorch on the
#     simulated GPU (skipped without .venv/).
# For each: the trace's bytes, the collector's peak RSS (VmHWM of the `vramtrace run` process
# alone, sampled every 20 ms until it exits: the program's own memory is not counted), the
# wall time, and how many allocations the trace folded into runs of repeated bins
# (docs/architecture.md, "Repeated bins"). The targets: the longer run's trace and RSS at most
# 1.1 times the shorter's.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${1:-build/release}"
n="${2:-1000000}"
steps="${3:-3000}"
which="${4:-both}"
vramtrace="$build/bin/vramtrace"
storm="$build/bin/vramtrace_storm_workload"
python=".venv/bin/python"
for tool in "$vramtrace" "$storm" sqlite3; do
  command -v "$tool" >/dev/null || { echo "long_run: $tool not found" >&2; exit 2; }
done

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# Records one command; prints "bytes rss_kib seconds folded allocations".
record() {
  local trace="$scratch/t.db" pid hwm=0 line t0 t1
  rm -f "$trace"
  t0=$(date +%s%N)
  "$vramtrace" run -o "$trace" -- "$@" >/dev/null 2>"$scratch/err" &
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    line=$(grep -s '^VmHWM:' "/proc/$pid/status" || true)
    [ -n "$line" ] && hwm=$(echo "$line" | awk '{print $2}')
    sleep 0.02
  done
  wait "$pid" || { echo "long_run: the recording failed" >&2; cat "$scratch/err" >&2; exit 1; }
  t1=$(date +%s%N)
  echo "$(stat -c %s "$trace") $hwm $(awk -v t="$((t1 - t0))" 'BEGIN { printf "%.2f", t / 1e9 }')" \
    "$(sqlite3 -separator ' ' "$trace" "SELECT coalesce((SELECT value FROM stats WHERE name =
       'storage_folded_allocations'), 0), (SELECT count(*) FROM allocation)")"
}

compare() {
  local name="$1" short_label="$2" long_label="$3"
  shift 3
  read -r sb sr st sf sa <<<"$(record "${@:1:$(($# / 2))}")"
  read -r lb lr lt lf la <<<"$(record "${@:$(($# / 2 + 1))}")"
  printf '%s %s: trace %d bytes, collector peak RSS %d KiB, %s s, %d of %d allocations folded\n' \
    "$name" "$short_label" "$sb" "$sr" "$st" "$sf" "$sa"
  printf '%s %s: trace %d bytes, collector peak RSS %d KiB, %s s, %d of %d allocations folded\n' \
    "$name" "$long_label" "$lb" "$lr" "$lt" "$lf" "$la"
  awk -v n="$name" -v sb="$sb" -v lb="$lb" -v sr="$sr" -v lr="$lr" \
    'BEGIN { printf "%s: ten times longer: trace x%.2f, collector peak RSS x%.2f (target: at most x1.10 each)\n", n, lb / sb, lr / sr }'
}

if [ "$which" != torch ]; then
  compare native "$n pairs" "$((10 * n)) pairs" \
    "$storm" "$n" 16 "$storm" "$((10 * n))" 16
fi
if [ "$which" = native ]; then
  :
elif [ -x "$python" ]; then
  simgpu=(tests/simcuda/simgpu --build "$build" --devices 1 --)
  compare torch "$steps steps" "$((10 * steps)) steps" \
    "${simgpu[@]}" "$python" bench/torch_step.py --steps "$steps" \
    "${simgpu[@]}" "$python" bench/torch_step.py --steps "$((10 * steps))"
else
  echo "torch: skipped (no $python; scripts/install-torch.sh)"
fi
