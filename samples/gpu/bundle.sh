#!/usr/bin/env bash
# Makes a folder from which samples/gpu/check.sh runs on a GPU machine that has no compiler and
# none of vramtrace's -dev packages: the programs check.sh runs and vramtrace's libraries, from a
# release build, and the shared libraries they load beyond the C and C++ runtimes and CUDA's
# own (libdw, libelf, protobuf, SQLite, fmt, libunwind, which the shim opens by name, and
# theirs). check.sh puts each of those on the library path only where the machine lacks it.
#
#     samples/gpu/bundle.sh [BUILD [DEST]]     # default: build/release and .gpucheck
#
# Then, on the GPU machine, in a checkout of the same commit with DEST copied into it:
#
#     BUILD=DEST/build samples/gpu/check.sh
#
# The build must come from a system with a glibc no newer than the GPU machine's.
# Exit status: 0 done; 1 a program or library is missing from the build; 2 usage.
set -euo pipefail
case "${1:-}" in
  -h | --help)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
esac
[ $# -le 2 ] || { echo "usage: samples/gpu/bundle.sh [BUILD [DEST]]" >&2; exit 2; }
build=${1:-build/release}
dest=${2:-.gpucheck}

# What check.sh runs; static_cudart_sample only where nvcc built it, the CUPTI library only where
# the toolkit has CUPTI.
programs=(vramtrace leaky e2e_cudart_codes_sim e2e_thread_storm vmm_expandable_segments)
optional_programs=(static_cudart_sample)
for program in "${programs[@]}"; do
  [ -x "$build/bin/$program" ] || { echo "bundle: no $build/bin/$program: build it first" >&2; exit 1; }
done
[ -f "$build/lib/vramtrace/libvramtrace_preload.so" ] ||
  { echo "bundle: no $build/lib/vramtrace/libvramtrace_preload.so" >&2; exit 1; }

rm -rf "$dest"
mkdir -p "$dest/build/bin" "$dest/build/lib/vramtrace" "$dest/libs"
for program in "${programs[@]}" "${optional_programs[@]}"; do
  [ -x "$build/bin/$program" ] && cp "$build/bin/$program" "$dest/build/bin/"
done
cp "$build"/lib/vramtrace/*.so "$dest/build/lib/vramtrace/"

# The libraries each file loads, and what they load (ldd lists the whole closure). Not the C and
# C++ runtimes, which the machine has and must use, nor CUDA's, which must be the machine's.
# awk reads to the end: leaving early would kill ldconfig with SIGPIPE, which pipefail and set -e
# turn into a silent exit of this script (one run in five).
unwind=$(ldconfig -p | awk '$1 == "libunwind.so.8" && /x86-64/ && !found {print $NF; found = 1}')
[ -n "$unwind" ] || { echo "bundle: no libunwind.so.8 on this system" >&2; exit 1; }
needed=$(ldd "$dest"/build/bin/* "$dest"/build/lib/vramtrace/*.so "$unwind" 2>/dev/null |
  awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
copied=0
while read -r name path; do
  case "$name" in
    linux-vdso* | ld-linux* | libc.so* | libm.so* | libstdc++* | libgcc_s* | libpthread* | \
      libdl.so* | librt.so* | libcuda.so* | libcudart.so* | libnvidia-ml.so* | libcupti.so*) continue ;;
  esac
  cp -L "$path" "$dest/libs/$name"
  copied=$((copied + 1))
done <<<"$needed"
cp -L "$unwind" "$dest/libs/libunwind.so.8"
echo "bundle: $dest holds $(ls "$dest/build/bin" | wc -l) programs, $(ls "$dest/build/lib/vramtrace" | wc -l) vramtrace libraries and $((copied + 1)) system libraries ($(du -sh "$dest" | cut -f1))"
