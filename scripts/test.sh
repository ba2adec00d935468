#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite (the dev preset: warnings
# are errors). This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

./scripts/install-deps.sh
cmake --preset dev
cmake --build --preset dev
ctest --preset dev --timeout 600
