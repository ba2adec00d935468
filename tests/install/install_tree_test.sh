#!/usr/bin/env bash
# `cmake --install` gives a relocatable tree: install into a temporary prefix, move the tree
# elsewhere, and record a program with the moved `vramtrace`. It must find its shim relative
# to its own location.
set -euo pipefail
build_dir=$1
program=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cmake --install "$build_dir" --prefix "$work/first" >/dev/null
mv "$work/first" "$work/moved"
"$work/moved/bin/vramtrace" run -o "$work/trace.db" -- "$program"
count=$("$work/moved/bin/vramtrace" summary --format json "$work/trace.db" |
        python3 -c 'import json,sys; print(sum(k["allocations"] for k in json.load(sys.stdin)["kinds"]))')
if [ "$count" != 1 ]; then
  echo "install_tree_test: expected 1 allocation in the trace, found $count" >&2
  exit 1
fi
echo "install_tree_test: the moved install recorded $count allocation"
