#!/usr/bin/env bash
# dry_run.sh BUILD: samples/gpu/check.sh from a bundle of BUILD (samples/gpu/bundle.sh), on the
# simulated GPU, as it would run on a real one. Every step must pass but the two that need the
# real driver (5: static cudart; 10: CUPTI), which must say so: the script is kept ready for the
# next machine with a GPU. Exit 77 (skip) without the pinned PyTorch, a failure under CI.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "$1" && pwd)
if [ ! -x "$root/.venv/bin/python" ]; then
  case "${CI:-}" in
    1 | true | TRUE | True | yes) echo "FAIL: CI is set and .venv/bin/python is missing" >&2; exit 1 ;;
  esac
  echo "SKIP: no .venv/bin/python: run scripts/install-torch.sh" >&2
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$root/samples/gpu/bundle.sh" "$build" "$work/bundle" || exit 1
cd "$root" || exit 1
OUT="$work/out" BUILD="$work/bundle/build" CUDART_DIR="$build/simcuda/lib" \
  "$root/tests/simcuda/simgpu" --build "$build" --devices 1 -- samples/gpu/check.sh \
  >"$work/console.txt" 2>&1
status=$?
results=$work/out/results.md
show() {
  echo "--- results.md"; cat "$results" 2>/dev/null
  echo "--- console"; tail -n 40 "$work/console.txt"
  for f in "$work"/out/*.stderr "$work"/out/torch_suite.txt; do
    [ -s "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }
  done
}
if [ "$status" != 0 ]; then echo "FAIL: check.sh exited $status"; show; exit 1; fi

# Per step: its checks passed, failed and skipped. Step 4 only measures; 5 and 10 need the real
# driver; every other step must pass at least one check and fail none.
verdict=$(awk '
  /^## [0-9]+\./ { step = $2 + 0; steps++ }
  /(^|: )PASS / { pass[step]++ }
  /(^|: )FAIL / { fail[step]++ }
  /^SKIP / { skip[step]++ }
  END {
    bad = ""
    for (s = 1; s <= 15; s++) {
      if (fail[s]) bad = bad " step " s " failed;"
      if (s == 5 || s == 10) { if (!skip[s] || pass[s]) bad = bad " step " s " did not skip;" }
      else if (s != 4 && (!pass[s] || skip[s])) bad = bad " step " s " did not pass;"
    }
    if (steps != 16) bad = bad " " steps " steps of 16 ran;"
    print bad
  }' "$results")
if [ -n "$verdict" ]; then
  echo "FAIL:$verdict"
  show
  exit 1
fi
echo "PASS: all 16 steps ran and passed, but those that need the real driver (5, 10), which said so"
