#!/usr/bin/env bash
# The checks that need a real GPU, in one script (at most 8 minutes). Run it on a machine with
# an NVIDIA GPU, from the repository root, after a release build (or with cmake and the
# Debian packages present, it builds one; or from a folder that samples/gpu/bundle.sh made,
# where the machine has neither):
#
#     samples/gpu/check.sh            # results in $OUT if set, else docs/measurements/DATE-HOST/
#     BUILD=.gpucheck/build samples/gpu/check.sh
#
# CUDART_DIR=<a build>/simcuda/lib under tests/simcuda/simgpu dry-runs it on the simulated GPU
# (tests/gpu_check: every step but those that need the real driver passes there).
#
# What it checks, against the real CUDA runtime (found on the machine, never the simulated
# one):
#   1. the leaky sample runs the same with and without vramtrace;
#   2. `vramtrace leaks` lists exactly the sample's planted leaks (kind, count, bytes, line);
#   3. every allocation call's return code and sticky error are the same with and without the
#      shim (tests/e2e/programs/cudart_return_codes.cpp);
#   4. the cost of recording: 100,000 cudaMalloc/cudaFree pairs, untraced and traced;
#   5. an nvcc-built program with the default static cudart (seen at the driver level): its
#      live device bytes in the trace against the driver's own count (cudaMemGetInfo);
#   6. the driver's virtual memory API used as PyTorch's expandable segments use it: live
#      physical bytes in the trace against the driver's count;
#   7. real PyTorch (where `import torch` finds CUDA): a training step's allocated and reserved
#      bytes in the trace against torch.cuda.memory_allocated()/memory_reserved() at every
#      marker, and the slowdown of a training step under vramtrace;
#   8. a fragmenting loop that OOMs without expandable segments and not with them;
#   9. an evaluation loop without no_grad, against the same loop with it;
#  10. the CUPTI backend (where libvramtrace_cupti.so is built and a driver is present): the
#      samples of steps 1, 4, 5 and 6 under --backend cupti and --backend both, their
#      allocations (count and bytes per kind) against the shim's, and the cost of each backend;
#  11. per-test limits inside pytest on real PyTorch;
#  12. native stacks: steps 1 and 7 again with VRAMTRACE_UNWINDER=libunwind, every stack the
#      same as the shim's own walk gave (real libcudart, libcuda, libtorch, libpython frames).
#  13. stack names: steps 1 and 7 again with VRAMTRACE_STACK_NAMES=0 (every stack sent whole),
#      every stack the same as with names, and how many went by name (the training step only
#      while the budget allows).
#  14. the torch test suite (tests/torch) on the real GPU, as CI runs it on the simulated one:
#      each of its comparisons with torch's own counters, on the real allocator and driver
#      (the tests that need a simulated device of a given size are skipped).
#  15. the driver's stream-ordered pool (samples/torch/pool_probe.py): how it counts used and
#      reserved bytes, against what vramtrace and the simulated GPU assume.
#  16. NVIDIA's math libraries: the device memory cuBLAS, cuBLASLt and cuDNN hold for
#      themselves after every operation of tests/torch/workloads/math_libraries.py, against
#      what they hold on the simulated GPU (its numbers are in the step's line), where the
#      simulation's driver differs from the real one most (tests/simcuda/README.md).
# Each step prints PASS, FAIL or SKIP with its reason; results.md collects them.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
build=${BUILD:-build/release}
out=${OUT:-docs/measurements/$(date +%F)-$(hostname -s)}
mkdir -p "$out"
results="$out/results.md"
# The script's budget is 8 minutes in all: the steps run under one timeout, and the steps it
# cut off are named as not run, so results.md always says how far it got.
budget=${CHECK_BUDGET_SECONDS:-470}
if [ -z "${VRAMTRACE_CHECK_INNER:-}" ]; then
  OUT=$out VRAMTRACE_CHECK_INNER=1 timeout "$budget" "$0" "$@"
  rc=$?
  if [ "$rc" = 124 ]; then
    echo "" | tee -a "$results"
    echo "STOPPED at the ${budget}-second budget: the steps after the last one above did not run" |
      tee -a "$results"
  fi
  exit "$rc"
fi
: >"$results"
say() { echo "$*" | tee -a "$results"; }
step() { say ""; say "## $*"; }

say "# vramtrace GPU check, $(date -u +%FT%TZ)"
say ""
say "- host: $(hostname), $(uname -srm)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -L 2>&1 | sed 's/^/- gpu: /' | tee -a "$results"
  say "- driver: $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n1)"
else
  say "- no nvidia-smi: this machine shows no NVIDIA GPU; the checks below still run and say so"
fi

# Build if needed and possible.
if [ ! -x "$build/bin/vramtrace" ]; then
  if command -v cmake >/dev/null 2>&1; then
    cmake --preset release >"$out/build.log" 2>&1 &&
      cmake --build --preset release --target vramtrace vramtrace_preload leaky \
        e2e_cudart_codes_sim e2e_thread_storm vmm_expandable_segments \
        static_cudart_sample >>"$out/build.log" 2>&1 ||
      { say "FAIL build: see build.log"; exit 1; }
  else
    say "FAIL no build at $build and no cmake to make one"; exit 1
  fi
fi
# A bundle (samples/gpu/bundle.sh): its system libraries, each only where this machine lacks it,
# so that the machine's own stay first.
bundled_libs=$(dirname "$build")/libs
if [ -d "$bundled_libs" ]; then
  lacking=$(mktemp -d)
  for lib in "$bundled_libs"/*; do
    name=${lib##*/}
    ldconfig -p | awk '{print $1}' | grep -qx "$name" || ln -s "$(realpath "$lib")" "$lacking/$name"
  done
  say "- bundled libraries used: $(ls "$lacking" | tr '\n' ' ')"
  export LD_LIBRARY_PATH=$lacking${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
build_path=$(cd "$build" && pwd)
missing=$(ldd "$build/bin/vramtrace" "$build/lib/vramtrace/libvramtrace_preload.so" 2>/dev/null | grep 'not found' || true)
if [ -n "$missing" ]; then
  say "FAIL libraries missing on this machine: $(echo $missing | tr '\n' ' ')"; exit 1
fi

# The real runtime: the toolkit's, the system's, or a PyTorch wheel's.
# CUDART_DIR overrides the search (pointing it at build/release/simcuda/lib dry-runs this
# script on the simulated GPU).
cudart_dir=${CUDART_DIR:-}
# The wheels' library folders: nvidia/cuda_runtime/lib (CUDA 12) and nvidia/cu13/lib (CUDA 13).
wheel_dirs=$(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, d, "lib") for p in nvidia.__path__ for d in sorted(os.listdir(p))))' 2>/dev/null)
for candidate in ${cudart_dir:+""} /usr/local/cuda/lib64 /usr/local/cuda-*/lib64 /usr/lib/x86_64-linux-gnu \
    $wheel_dirs; do
  [ -n "$cudart_dir" ] && break
  if ls "$candidate"/libcudart.so.1[23] >/dev/null 2>&1; then cudart_dir=$candidate; break; fi
done
if [ -z "$cudart_dir" ]; then say "FAIL no real libcudart.so.12/13 found"; exit 1; fi
say "- runtime: $(ls "$cudart_dir"/libcudart.so.1[23] | sort -r | head -n1)"
# The simulated GPU's runtime (a build's simcuda/lib): a dry run of this script.
simulated=0
if [[ "$cudart_dir" == */simcuda/lib ]]; then
  simulated=1
  say "- the simulated GPU (tests/simcuda): a dry run; the steps that need the real driver say so"
fi
# The real driver too: the samples' RUNPATH names the simulated libcuda.so.1, and only
# LD_LIBRARY_PATH comes before RUNPATH.
driver_dir=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}' | xargs -r dirname)
if [ -z "$driver_dir" ]; then
  for candidate in /usr/local/nvidia/lib64 /usr/lib64 /usr/lib/x86_64-linux-gnu; do
    if [ -e "$candidate/libcuda.so.1" ]; then driver_dir=$candidate; break; fi
  done
fi
[ -n "$driver_dir" ] && say "- driver: $driver_dir/libcuda.so.1"
export LD_LIBRARY_PATH=$cudart_dir${driver_dir:+:$driver_dir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
# Queries a trace with Python's sqlite3 module (the machine may have no sqlite3 program): one
# line per row, columns joined by '|', as the sqlite3 shell prints them.
sql() {
  python3 -c '
import sqlite3, sys
for row in sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in row))' "$1" "$2"
}
vt="$build/bin/vramtrace"

step "1. the leaky sample, untraced and traced"
timeout 60 "$build/bin/leaky" >"$out/leaky.plain.txt" 2>&1
plain_rc=$?
timeout 120 "$vt" run --force -o "$out/leaky.db" -- "$build/bin/leaky" >"$out/leaky.traced.txt" 2>"$out/leaky.run.stderr"
traced_rc=$?
if [ "$plain_rc" = "$traced_rc" ] && [ "$plain_rc" = 0 ]; then say "PASS exit status 0 both ways"
else say "FAIL exit status: untraced $plain_rc, traced $traced_rc (see leaky.*.txt)"; fi
grep -q "as it should" "$out/leaky.plain.txt" && grep -q "leaky: done" "$out/leaky.traced.txt" &&
  say "PASS same output lines" || say "FAIL outputs differ: see leaky.plain.txt, leaky.traced.txt"

step "2. the leak report lists exactly the planted leaks"
"$vt" leaks --format json "$out/leaky.db" >"$out/leaks.json" 2>"$out/leaks.stderr"
"$vt" leaks "$out/leaky.db" >"$out/leaks.txt" 2>&1
"$vt" summary "$out/leaky.db" >"$out/summary.txt" 2>&1
if command -v python3 >/dev/null 2>&1; then
  python3 - "$root/samples/leaky/leaky.cpp" "$out/leaks.json" <<'PY' | tee -a "$results"
import json, re, sys
source, report = sys.argv[1], json.load(open(sys.argv[2]))
planted = {}
for number, text in enumerate(open(source), 1):
    m = re.search(r"LEAK\((\w+), (\d+), (\d+)\)", text)
    if m: planted[number] = (m[1], int(m[2]), int(m[3]))
found = {}
for leak in report["leaks"]:
    top = leak["stack"][0] if leak["stack"] else {}
    found[top.get("line")] = (leak["kind"], leak["count"], leak["bytes"])
if found == planted:
    print(f"PASS {len(planted)} leak groups, kinds, counts, bytes and lines as planted")
else:
    print(f"FAIL planted {planted} but reported {found}")
PY
else
  say "SKIP no python3 to compare; leaks.json kept"
fi

step "3. return codes are the same with and without the shim"
timeout 60 "$build/bin/e2e_cudart_codes_sim" >"$out/codes.plain.txt" 2>&1
timeout 120 "$vt" run --force -o "$out/codes.db" -- "$build/bin/e2e_cudart_codes_sim" >"$out/codes.traced.txt" 2>/dev/null
if diff -u "$out/codes.plain.txt" "$out/codes.traced.txt" >"$out/codes.diff"; then
  say "PASS $(wc -l <"$out/codes.plain.txt") calls, identical codes and sticky errors"
else say "FAIL codes differ: see codes.diff"; fi

step "4. the cost of recording (100,000 cudaMalloc/cudaFree pairs, one thread)"
t0=$(date +%s.%N)
timeout 120 "$build/bin/e2e_thread_storm" 1 100000 >"$out/storm.plain.txt" 2>&1
storm_plain=$?
t1=$(date +%s.%N)
timeout 300 "$vt" run --force -o "$out/storm.db" -- "$build/bin/e2e_thread_storm" 1 100000 \
  >"$out/storm.traced.txt" 2>&1
storm_traced=$?
t2=$(date +%s.%N)
if [ "$storm_plain" = 0 ] && [ "$storm_traced" = 0 ]; then
  say "$(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN { printf "untraced %.3f s, traced %.3f s: %.2f us per event more (200,000 events; wall time, start-up and the trace'"'"'s finish included)", b - a, c - b, ((c - b) - (b - a)) * 1e6 / 200000 }')"
else
  say "FAIL the workload failed (untraced $storm_plain, traced $storm_traced): see storm.*.txt"
fi

# Live bytes of the given kinds in a trace, from `vramtrace summary --format json`.
live_bytes() {
  "$vt" summary --format json "$1" | python3 -c '
import json, sys
kinds = set(sys.argv[1].split(","))
print(sum(k["live_bytes"] for k in json.load(sys.stdin)["kinds"] if k["kind"] in kinds))' "$2"
}
# Compares the driver's delta (printed by the sample) with the trace's live bytes: the driver
# rounds to its pages and may keep pool memory, so it may exceed the trace by up to 64 MiB.
compare_with_driver() {
  local output=$1 trace=$2 kinds=$3
  local driver recorded
  driver=$(sed -n 's/.*driver_device_bytes_used_delta=\(-\{0,1\}[0-9]*\).*/\1/p' "$output")
  recorded=$(live_bytes "$trace" "$kinds")
  if [ -z "$driver" ] || [ -z "$recorded" ]; then say "FAIL no numbers to compare (see $output)"; return; fi
  if [ "$driver" -ge "$recorded" ] && [ "$driver" -le $((recorded + 64 * 1048576)) ]; then
    say "PASS driver says $driver bytes more in use; the trace holds $recorded live ($kinds)"
  else
    say "FAIL driver says $driver bytes more in use; the trace holds $recorded live ($kinds)"
  fi
}

step "5. static cudart (nvcc's default), seen at the driver level"
if [ "$simulated" = 1 ]; then
  say "SKIP a static cudart needs the real driver's private interfaces"
elif [ -x "$build/bin/static_cudart_sample" ]; then
  timeout 120 "$vt" run --force -o "$out/static.db" -- "$build/bin/static_cudart_sample" \
    >"$out/static.txt" 2>&1
  if [ $? = 0 ]; then
    "$vt" leaks "$out/static.db" >"$out/static.leaks.txt" 2>&1
    compare_with_driver "$out/static.txt" "$out/static.db" device,async
  else
    say "FAIL the static-cudart sample failed: see static.txt"
  fi
else
  say "SKIP no static_cudart_sample (built where nvcc exists)"
fi

step "6. the virtual memory API, as expandable segments use it"
timeout 120 "$vt" run --force -o "$out/vmm.db" -- "$build/bin/vmm_expandable_segments" \
  >"$out/vmm.txt" 2>&1
if [ $? = 0 ]; then
  "$vt" summary "$out/vmm.db" >"$out/vmm.summary.txt" 2>&1
  compare_with_driver "$out/vmm.txt" "$out/vmm.db" vmm_handle
else
  say "FAIL the VMM sample failed: see vmm.txt"
fi

# Real PyTorch: a python3 whose torch sees a GPU. The markers come from the vramtrace package in
# python/ (standard library only).
# The pinned wheel of .venv/ (scripts/install-torch.sh) where there is one, else python3's.
if [ -x "$root/.venv/bin/python" ]; then default_torch_python=$root/.venv/bin/python; else default_torch_python=python3; fi
torch_python=${TORCH_PYTHON:-$default_torch_python}
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
if timeout 120 "$torch_python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
    >"$out/torch.probe.txt" 2>&1; then
  have_torch=1
  say "- torch: $("$torch_python" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)' 2>&1)"
else
  have_torch=0
fi
samples_torch=$root/samples/torch

# Median of the "step_seconds" of a sample's JSON lines, leaving out the first 3 (warm-up).
median_step() {
  python3 -c '
import json, statistics, sys
steps = [json.loads(l)["step_seconds"] for l in open(sys.argv[1]) if l.startswith("{")][3:]
print(statistics.median(steps) if steps else 0)' "$1"
}

step "7. real PyTorch: the trace against torch.cuda.memory_allocated/reserved, and the slowdown"
if [ "$have_torch" = 1 ]; then
  timeout 180 "$torch_python" "$samples_torch/train_leak.py" >"$out/torch_train.plain.jsonl" 2>"$out/torch_train.plain.stderr"
  plain_rc=$?
  timeout 240 "$vt" run --force -o "$out/torch_train.db" -- "$torch_python" "$samples_torch/train_leak.py" \
    >"$out/torch_train.jsonl" 2>"$out/torch_train.stderr"
  traced_rc=$?
  if [ "$plain_rc" = 0 ] && [ "$traced_rc" = 0 ]; then
    python3 "$samples_torch/compare_with_torch.py" "$out/torch_train.db" "$out/torch_train.jsonl" | tee -a "$results"
    say "$(python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f"training step (median after warm-up): untraced {a*1e3:.2f} ms, traced {b*1e3:.2f} ms, slowdown {b/a:.3f}x" if a > 0 else "no step times")' \
      "$(median_step "$out/torch_train.plain.jsonl")" "$(median_step "$out/torch_train.jsonl")")"
    "$vt" leaks "$out/torch_train.db" >"$out/torch_train.leaks.txt" 2>&1
    "$vt" summary "$out/torch_train.db" >"$out/torch_train.summary.txt" 2>&1
    say "INFO python stacks: $(sql "$out/torch_train.db" "SELECT group_concat(name || '=' || value, ', ') FROM stats WHERE name LIKE 'python_%'" 2>&1) (see torch_train.leaks.txt)"
  else
    say "FAIL the training sample failed (untraced $plain_rc, traced $traced_rc): see torch_train.*"
  fi
else
  say "SKIP no python3 with a CUDA-enabled torch (TORCH_PYTHON picks another): see torch.probe.txt"
fi

step "8. fragmentation: OOM without expandable segments, none with them"
if [ "$have_torch" = 1 ]; then
  timeout 180 "$vt" run --force -o "$out/torch_frag.db" -- "$torch_python" "$samples_torch/fragmentation.py" \
    >"$out/torch_frag.txt" 2>"$out/torch_frag.stderr"
  PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True timeout 180 "$vt" run --force -o "$out/torch_frag_es.db" -- \
    "$torch_python" "$samples_torch/fragmentation.py" >"$out/torch_frag_es.txt" 2>"$out/torch_frag_es.stderr"
  "$vt" oom "$out/torch_frag.db" >"$out/torch_frag.oom.txt" 2>&1
  "$vt" oom --format json "$out/torch_frag.db" >"$out/torch_frag.oom.json" 2>&1
  if grep -q '"oom": true' "$out/torch_frag.txt" && grep -q '"oom": false' "$out/torch_frag_es.txt"; then
    say "PASS OOM without expandable segments, none with them"
  else
    say "FAIL expected an OOM only without expandable segments: see torch_frag.txt, torch_frag_es.txt"
  fi
  if grep -qi 'expandable' "$out/torch_frag.oom.txt"; then say "PASS vramtrace oom advises expandable segments"
  else say "FAIL vramtrace oom did not advise expandable segments: see torch_frag.oom.txt"; fi
else
  say "SKIP no python3 with a CUDA-enabled torch"
fi

step "9. evaluation without no_grad, against the same loop with it"
if [ "$have_torch" = 1 ]; then
  timeout 180 "$vt" run --force -o "$out/torch_eval.db" -- "$torch_python" "$samples_torch/eval_without_no_grad.py" \
    >"$out/torch_eval.jsonl" 2>"$out/torch_eval.stderr"
  timeout 180 "$vt" run --force -o "$out/torch_eval_nograd.db" -- "$torch_python" "$samples_torch/eval_without_no_grad.py" --no-grad \
    >"$out/torch_eval_nograd.jsonl" 2>"$out/torch_eval_nograd.stderr"
  for run in torch_eval torch_eval_nograd; do
    python3 "$samples_torch/compare_with_torch.py" "$out/$run.db" "$out/$run.jsonl" | sed "s/^/$run: /" | tee -a "$results"
  done
  say "$(python3 -c '
import json, sys
def growth(path):
    a = [json.loads(l)["allocated"] for l in open(path) if l.startswith("{")]
    return (a[-1] - a[0]) / max(len(a) - 1, 1) if a else 0
g, n = growth(sys.argv[1]), growth(sys.argv[2])
print(f"growth per step: without no_grad {g/2**20:.1f} MiB, with no_grad {n/2**20:.1f} MiB")' \
    "$out/torch_eval.jsonl" "$out/torch_eval_nograd.jsonl")"
  "$vt" summary "$out/torch_eval.db" >"$out/torch_eval.summary.txt" 2>&1
else
  say "SKIP no python3 with a CUDA-enabled torch"
fi

step "10. the CUPTI backend against the shim, and the cost of each"
cupti_lib=$build/lib/vramtrace/libvramtrace_cupti.so
# libcupti from the toolkit or a wheel, where the loader would not find it by itself.
if [ -z "${VRAMTRACE_CUPTI_LIBRARY:-}" ]; then
  for candidate in /usr/local/cuda/extras/CUPTI/lib64 /usr/local/cuda-*/extras/CUPTI/lib64 $wheel_dirs; do
    found=$(ls "$candidate"/libcupti.so.1[23] 2>/dev/null | sort -r | head -n1)
    if [ -n "$found" ]; then export VRAMTRACE_CUPTI_LIBRARY=$found; break; fi
  done
fi
[ -n "${VRAMTRACE_CUPTI_LIBRARY:-}" ] && say "- cupti: $VRAMTRACE_CUPTI_LIBRARY"
if [ ! -f "$cupti_lib" ] && command -v cmake >/dev/null 2>&1 && [ -d "$build" ]; then
  cmake --build "$build" --target vramtrace_cupti >>"$out/build.log" 2>&1
fi
if [ ! -f "$cupti_lib" ]; then
  say "SKIP no $cupti_lib (built only where the CUDA toolkit has CUPTI)"
elif [ -z "$driver_dir" ]; then
  say "SKIP no libcuda.so.1 on this machine: CUPTI needs the real driver"
else
  # Successful allocations per kind, "kind count bytes" lines, from one backend's processes.
  per_kind() {
    sql "$1" "SELECT k.name, COUNT(*), SUM(a.size) FROM allocation a JOIN allocation_kind k ON k.id = a.kind
                  JOIN process p ON p.upid = a.upid WHERE a.result = 0 AND p.backend = '$2'
                  GROUP BY a.kind ORDER BY a.kind" 2>/dev/null
  }
  for sample in leaky static_cudart_sample vmm_expandable_segments; do
    [ -x "$build/bin/$sample" ] || { say "SKIP $sample: not built"; continue; }
    for backend in preload cupti both; do
      timeout 120 "$vt" run --force --backend "$backend" -o "$out/cupti.$sample.$backend.db" -- \
        "$build/bin/$sample" >"$out/cupti.$sample.$backend.txt" 2>&1 ||
        say "INFO $sample under --backend $backend exited non-zero: see cupti.$sample.$backend.txt"
    done
    per_kind "$out/cupti.$sample.preload.db" preload >"$out/cupti.$sample.kinds.preload"
    per_kind "$out/cupti.$sample.cupti.db" cupti >"$out/cupti.$sample.kinds.cupti"
    if [ ! -s "$out/cupti.$sample.kinds.cupti" ]; then
      say "FAIL $sample: CUPTI recorded no allocation: $(grep -h 'CUPTI' "$out/cupti.$sample.cupti.txt" | head -n1)"
    elif diff -u "$out/cupti.$sample.kinds.preload" "$out/cupti.$sample.kinds.cupti" >"$out/cupti.$sample.kinds.diff"; then
      say "PASS $sample: shim and CUPTI (separate runs) saw the same allocations per kind: $(tr '\n|' '; ' <"$out/cupti.$sample.kinds.preload")"
    else
      say "FAIL $sample: the shim and CUPTI saw different allocations (separate runs): see cupti.$sample.kinds.diff"
    fi
    "$vt" summary --format json "$out/cupti.$sample.both.db" >"$out/cupti.$sample.both.json" 2>&1
    "$vt" summary "$out/cupti.$sample.both.db" >"$out/cupti.$sample.both.summary.txt" 2>&1
    python3 - "$out/cupti.$sample.both.json" "$sample" <<'PY' | tee -a "$results"
import json, sys
b = json.load(open(sys.argv[1])).get("backends")
if not b:
    print(f"FAIL {sys.argv[2]} --backend both: the trace does not hold both backends' processes")
elif b["only_preload"] == 0 and b["only_cupti"] == 0:
    kinds = "; ".join(f'{k["kind"]} {k["preload_allocations"]}/{k["cupti_allocations"]}' for k in b["kinds"])
    print(f"PASS {sys.argv[2]} --backend both: every allocation seen by both ({kinds})")
else:
    print(f'FAIL {sys.argv[2]} --backend both: only the shim saw {b["only_preload"]}, only CUPTI {b["only_cupti"]} (see the .both.summary.txt)')
PY
    # Every allocation and release record names the allocation its callback made or freed.
    unmatched=$(sql "$out/cupti.$sample.cupti.db" "SELECT IFNULL(SUM(operation IN ('allocation', 'release') AND allocation_id IS NULL), 0) FROM memory_activity" 2>&1)
    rows=$(sql "$out/cupti.$sample.cupti.db" "SELECT COUNT(*) FROM memory_activity" 2>&1)
    if [ "$unmatched" = 0 ]; then
      say "PASS $sample: each of its $rows activity records names its call's allocation"
    else
      say "FAIL $sample: $unmatched of $rows allocation/release activity records name no allocation"
    fi
  done
  # The cost: step 4's workload under each backend.
  timings=""
  for backend in none preload cupti both; do
    t0=$(date +%s.%N)
    if [ "$backend" = none ]; then
      timeout 300 "$build/bin/e2e_thread_storm" 1 100000 >/dev/null 2>&1
    else
      timeout 300 "$vt" run --force --backend "$backend" -o "$out/cupti.storm.$backend.db" -- \
        "$build/bin/e2e_thread_storm" 1 100000 >/dev/null 2>"$out/cupti.storm.$backend.stderr"
    fi
    rc=$?
    t1=$(date +%s.%N)
    timings="$timings $backend=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')s(rc $rc)"
  done
  say "INFO 100,000 cudaMalloc/cudaFree pairs, wall time per backend:$timings"
fi

step "11. per-test limits inside pytest on real PyTorch (limit_gpu_leaks, limit_gpu_memory)"
if [ "$have_torch" = 1 ] && "$torch_python" -c 'import pytest' >/dev/null 2>&1; then
  timeout 180 "$vt" run --force -o "$out/torch_limits.db" -- "$torch_python" -m pytest -q -rf \
    -p vramtrace.pytest -p no:cacheprovider "$samples_torch/test_gpu_limits.py" \
    >"$out/torch_limits.txt" 2>"$out/torch_limits.stderr"
  failed=$(grep '^FAILED ' "$out/torch_limits.txt" | sed 's/.*:://; s/ .*//' | sort | tr '\n' ' ')
  plant=$(grep -n 'PLANT: kept tensor' "$samples_torch/test_gpu_limits.py" | cut -d: -f1)
  if [ "$failed" = "test_holds_too_much_at_once test_keeps_a_tensor " ]; then
    say "PASS exactly the two tests over their limits failed"
  else
    say "FAIL failed tests: '$failed' (expected test_holds_too_much_at_once test_keeps_a_tensor): see torch_limits.txt"
  fi
  if grep -q "test_keeps_a_tensor at .*test_gpu_limits.py:$plant (python)" "$out/torch_limits.txt"; then
    say "PASS the kept tensor is named at test_gpu_limits.py:$plant"
  else
    say "FAIL the kept tensor's line ($plant) is not in the failure: see torch_limits.txt"
  fi
else
  say "SKIP no python3 with a CUDA-enabled torch and pytest"
fi

step "12. native stacks: the shim's walk by frame rules against libunwind"
# The same programs again with every stack walked by libunwind: the stacks (real libcudart,
# libcuda, libtorch and libpython frames among them) must be the same.
if command -v python3 >/dev/null 2>&1; then
  timeout 120 env VRAMTRACE_UNWINDER=libunwind "$vt" run --force -o "$out/leaky.libunwind.db" -- \
    "$build/bin/leaky" >/dev/null 2>&1
  python3 "$root/samples/gpu/compare_stacks.py" "$out/leaky.db" "$out/leaky.libunwind.db" | tee -a "$results"
  if [ "$have_torch" = 1 ] && [ -f "$out/torch_train.db" ]; then
    timeout 240 env VRAMTRACE_UNWINDER=libunwind "$vt" run --force -o "$out/torch_train.libunwind.db" -- \
      "$torch_python" "$samples_torch/train_leak.py" >"$out/torch_train.libunwind.jsonl" 2>/dev/null
    python3 "$root/samples/gpu/compare_stacks.py" "$out/torch_train.db" "$out/torch_train.libunwind.db" | tee -a "$results"
    say "$(python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f"INFO training step traced (median after warm-up): {a*1e3:.2f} ms with the walk, {b*1e3:.2f} ms with libunwind" if a > 0 and b > 0 else "INFO no step times")' \
      "$(median_step "$out/torch_train.jsonl")" "$(median_step "$out/torch_train.libunwind.jsonl")")"
  fi
else
  say "SKIP no python3 to compare the stacks"
fi

step "13. stack names: each thread's stacks sent once, then by name, against every stack sent whole"
if command -v python3 >/dev/null 2>&1; then
  by_name() {
    sql "$1" "SELECT coalesce(sum(value), 0) FROM stats WHERE name = 'stacks_by_name'" 2>/dev/null || echo "?"
  }
  timeout 120 env VRAMTRACE_STACK_NAMES=0 "$vt" run --force -o "$out/leaky.unnamed.db" -- \
    "$build/bin/leaky" >/dev/null 2>&1
  python3 "$root/samples/gpu/compare_stacks.py" "$out/leaky.db" "$out/leaky.unnamed.db" | tee -a "$results"
  say "INFO leaky: $(by_name "$out/leaky.db") stacks by name"
  # The training step again only with two minutes of the budget left for it.
  if [ "$have_torch" = 1 ] && [ -f "$out/torch_train.db" ] && [ "$SECONDS" -lt $((budget - 120)) ]; then
    timeout 110 env VRAMTRACE_STACK_NAMES=0 "$vt" run --force -o "$out/torch_train.unnamed.db" -- \
      "$torch_python" "$samples_torch/train_leak.py" >"$out/torch_train.unnamed.jsonl" 2>/dev/null
    python3 "$root/samples/gpu/compare_stacks.py" "$out/torch_train.db" "$out/torch_train.unnamed.db" | tee -a "$results"
    say "INFO training: $(by_name "$out/torch_train.db") stacks by name"
    say "$(python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); print(f"INFO training step traced (median after warm-up): {a*1e3:.2f} ms with names, {b*1e3:.2f} ms without" if a > 0 and b > 0 else "INFO no step times")' \
      "$(median_step "$out/torch_train.jsonl")" "$(median_step "$out/torch_train.unnamed.jsonl")")"
  else
    say "SKIP the training step without names: no torch, or too little of the budget left"
  fi
else
  say "SKIP no python3 to compare the stacks"
fi

step "14. the torch test suite (tests/torch) on the real GPU"
if [ "$have_torch" = 1 ]; then
  # The suites that need no simulated device size; oom and the viewer are steps 8 and above.
  (cd tests/torch &&
    VRAMTRACE_TORCH_GPU=real VRAMTRACE_BINARY="$build_path/bin/vramtrace" \
      VRAMTRACE_BUILD_DIR="$build_path" TORCH_PYTHON="$torch_python" \
      PYTHONPATH="$root/python:$root/tests/torch" PYTHONDONTWRITEBYTECODE=1 \
      timeout 300 "$torch_python" -m unittest -v test_smoke test_markers test_frag test_leaks \
        test_backends test_autograd test_stacks test_pytest_plugin test_math_libraries \
        test_models) \
    >"$out/torch_suite.txt" 2>&1
  rc=$?
  summary=$(grep -E '^(Ran|OK|FAILED)' "$out/torch_suite.txt" | tr '\n' ' ')
  if [ "$rc" = 0 ]; then say "PASS $summary(torch_suite.txt)"; else say "FAIL ($rc) $summary(torch_suite.txt)"; fi
else
  say "SKIP no CUDA-enabled torch (TORCH_PYTHON=$torch_python)"
fi

step "15. the driver's stream-ordered pool, as the simulated GPU models it"
if [ "$have_torch" = 1 ]; then
  PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync timeout 120 "$torch_python" \
    "$samples_torch/pool_probe.py" >"$out/pool_probe.txt" 2>&1
  grep -E '^(PASS|FAIL)' "$out/pool_probe.txt" | tee -a "$results"
  grep -qE '^(PASS|FAIL)' "$out/pool_probe.txt" || say "FAIL the probe printed no verdict: see pool_probe.txt"
else
  say "SKIP no CUDA-enabled torch (TORCH_PYTHON=$torch_python)"
fi

step "16. the device memory NVIDIA's math libraries hold for themselves"
if [ "$have_torch" = 1 ]; then
  rm -f "$out/math_libraries.db"
  PYTHONPATH="$root/python" timeout 120 "$build_path/bin/vramtrace" run -o "$out/math_libraries.db" \
    -- "$torch_python" tests/torch/workloads/math_libraries.py >"$out/math_libraries.txt" 2>&1
  "$build_path/bin/vramtrace" leaks "$out/math_libraries.db" --format json \
    >"$out/math_libraries_leaks.json" 2>>"$out/math_libraries.txt"
  held=$("$torch_python" -c '
import json, sys
report = json.load(open(sys.argv[1]))
print(", ".join(f"{h[\"library\"]} {h[\"bytes\"]} bytes in {h[\"count\"]}"
                for h in report["held_by_libraries"]) or "nothing")' "$out/math_libraries_leaks.json" 2>&1)
  if grep -q '"failed": \[\]' "$out/math_libraries.txt"; then
    say "PASS every operation ran; held by the libraries: $held (simulated H100, cuBLAS 13.1:" \
        "libcublas.so.13 134481920 bytes in 6, libcudnn_graph.so.9 50704 bytes in 6)"
  else
    say "FAIL an operation failed or the run did not finish: see math_libraries.txt"
  fi
else
  say "SKIP no CUDA-enabled torch (TORCH_PYTHON=$torch_python)"
fi

say ""
say "Files: $(cd "$out" && ls | tr '\n' ' ')"
