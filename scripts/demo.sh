#!/usr/bin/env bash
# The quick start: installs what is missing, builds vramtrace, records the leaky sample with
# `vramtrace run`, and prints its leak report. On a machine without an NVIDIA GPU the sample
# runs on the simulated GPU (tests/simcuda); the script says which it used.
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target vramtrace vramtrace_preload leaky

build=build/release
sample=$build/bin/leaky
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 &&
   [ -e /usr/local/cuda/lib64/libcudart.so.13 ]; then
  echo "demo: recording on the real GPU ($(nvidia-smi -L | head -n 1))"
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  echo "demo: no NVIDIA GPU here: recording on the simulated GPU (tests/simcuda's libcudart)"
fi

trace=$build/leaky-demo.db
"$build/bin/vramtrace" run --force -o "$trace" -- "$sample"
echo
"$build/bin/vramtrace" leaks "$trace"
