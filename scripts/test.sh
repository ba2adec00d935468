#!/usr/bin/env bash
# Installs what is missing (the pinned PyTorch wheel included: scripts/install-deps.sh), checks
# the formatting (scripts/check-format.sh), builds, and runs the whole test suite twice: with the
# dev preset (warnings are errors), then with the asan preset (AddressSanitizer and UBSan on
# everything but the code loaded into traced programs). Then a ThreadSanitizer slice (the tsan
# preset: the collector, transport and storage tests alone), and the fuzzers (docs/fuzzing.md):
# every seed once, and a bounded run of each, under two minutes in all. Tests run one per core, as
# HACKING.md asks them to pass. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

./scripts/install-deps.sh
echo "== format =="
./scripts/check-format.sh
for preset in dev asan; do
  echo "== $preset =="
  cmake --preset "$preset"
  cmake --build --preset "$preset"
  ctest --preset "$preset" -j "$jobs" --timeout 600
done

echo "== tsan (collector, transport, storage) =="
cmake --preset tsan
cmake --build --preset tsan
ctest --preset tsan -j "$jobs" --timeout 300

echo "== fuzz =="
cmake --preset fuzz
cmake --build --preset fuzz
ctest --preset fuzz --timeout 120
./scripts/fuzz.sh 50
