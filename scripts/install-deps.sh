#!/usr/bin/env bash
# Installs every Debian package vramtrace needs to build and test, then the pinned PyTorch wheel
# into .venv/ (scripts/install-torch.sh). Idempotent: it asks apt only for what is missing and
# pip only for a pin not yet installed, so a second run on a ready machine does nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libunwind-dev libdw-dev libelf-dev
  libprotobuf-dev protobuf-compiler nanopb libnanopb-dev
  libsqlite3-dev sqlite3
  libzstd-dev            # the simulated GPU reads compressed fat binaries (tests/simcuda)
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev libfmt-dev nlohmann-json3-dev
  python3 python3-dev python3-pytest
  python3-venv           # .venv/ for the pinned PyTorch (scripts/install-torch.sh)
  clang libclang-rt-dev  # the fuzz preset: clang++ and libFuzzer (docs/fuzzing.md)
  clang-format clang-tidy  # scripts/check-format.sh in CI; .clang-tidy (HACKING.md)
  util-linux             # unshare, setpriv: the full-disk and other-uid tests
  qt6-base-dev           # the viewer (viewer/, docs/viewer.md); its tests run offscreen
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Status 3: no CUDA 13 toolkit to lend torch its math libraries; everything else still builds,
# and the torch tests say why they cannot run (tests/torch/README.md).
status=0
"$(dirname "$0")/install-torch.sh" || status=$?
if [ "$status" -ne 0 ] && [ "$status" -ne 3 ]; then exit "$status"; fi
