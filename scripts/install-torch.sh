#!/usr/bin/env bash
# Installs the pinned PyTorch CUDA wheel (tests/torch/requirements.txt) into .venv/ at the
# repository root, for the `torch` tests on the simulated GPU (tests/torch/README.md).
#
# Wheels are downloaded once into a wheelhouse (VRAMTRACE_WHEELHOUSE, default
# ~/.cache/vramtrace/wheels) and installed from it offline, so a second run downloads nothing;
# a venv already holding the pin installs nothing. A failed download is retried; one that
# cannot succeed ends with one line saying what to do.
#
# Exit status: 0 installed or already present; 1 the wheels could not be had or installed;
# 3 the machine lacks the CUDA 13 toolkit libraries torch loads (nothing is installed; the
# torch tests then fail under CI and are skipped elsewhere).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pin="$root/tests/torch/requirements.txt"
venv="${VRAMTRACE_VENV:-$root/.venv}"
wheelhouse="${VRAMTRACE_WHEELHOUSE:-${XDG_CACHE_HOME:-$HOME/.cache}/vramtrace/wheels}"
python="${VRAMTRACE_VENV_PYTHON:-/usr/bin/python3}"

say() { echo "install-torch: $*"; }

# The math libraries torch's CUDA libraries need at load, taken from the CUDA 13 toolkit
# (the pin file says why); libcudart.so.13 and libcuda.so.1 are the simulated GPU's.
toolkit_sonames=(libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 libcufft.so.12
                 libcusparse.so.12 libcusolver.so.12 libnvrtc.so.13 libcupti.so.13)
# Read once: `ldconfig -p | grep -q` would fail now and then under pipefail, when grep's early
# exit ends ldconfig with SIGPIPE.
known_libraries="$(ldconfig -p)"
missing=()
for soname in "${toolkit_sonames[@]}"; do
  if ! grep -q "^[[:space:]]*$soname " <<<"$known_libraries"; then missing+=("$soname"); fi
done
if [ ${#missing[@]} -gt 0 ]; then
  say "the CUDA 13 toolkit's ${missing[*]} are not known to the dynamic linker (ldconfig -p);" \
      "PyTorch is not installed and the torch tests cannot run on this machine"
  exit 3
fi

stamp="$venv/.vramtrace-pin"
want="$(sha256sum "$pin" | cut -d' ' -f1)"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  say "the pinned torch is present in ${venv#"$root"/}"
  exit 0
fi

if [ ! -x "$venv/bin/python" ]; then
  say "creating ${venv#"$root"/} with $("$python" --version 2>&1)"
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check --no-input --quiet)
mkdir -p "$wheelhouse"

offline_install() {
  "${pip[@]}" install --no-index --find-links "$wheelhouse" --no-deps -r "$pin" 2>/dev/null
}

if ! offline_install; then
  say "downloading the pinned wheels into $wheelhouse (about 1.1 GB the first time)"
  downloaded=0
  for attempt in 1 2 3; do
    if "${pip[@]}" download --no-deps --only-binary=:all: --retries 5 --timeout 60 \
         -d "$wheelhouse" -r "$pin"; then
      downloaded=1
      break
    fi
    if [ "$attempt" -lt 3 ]; then
      say "download attempt $attempt failed; retrying in $((attempt * 10)) s"
      sleep $((attempt * 10))
    fi
  done
  if [ "$downloaded" -ne 1 ]; then
    say "could not download the wheels pinned in ${pin#"$root"/} from PyPI after 3 attempts;" \
        "put them in VRAMTRACE_WHEELHOUSE (pip download --no-deps -r the pin file) and rerun"
    exit 1
  fi
  if ! "${pip[@]}" install --no-index --find-links "$wheelhouse" --no-deps -r "$pin"; then
    say "the downloaded wheels did not install into ${venv#"$root"/} (see pip's message above)"
    exit 1
  fi
fi
echo "$want" > "$stamp"
say "installed $("$venv/bin/python" -c 'import importlib.metadata as m; print("torch", m.version("torch"))')" \
    "into ${venv#"$root"/}"
