#!/usr/bin/env python3
"""Compares the allocation stacks of two traces of the same program: one recorded as `run`
records by default, one another way (VRAMTRACE_UNWINDER=libunwind, or VRAMTRACE_STACK_NAMES=0).
Each allocation is its size and its stack (function and address of every frame, Python frames
included), and the two traces' sorted lists must be equal. Prints one PASS or FAIL line
(samples/gpu/check.sh).

    compare_stacks.py DEFAULT.db OTHER.db
"""
import sqlite3
import sys

STACKS = """
WITH RECURSIVE chain(alloc_id, callsite_id, depth, text) AS (
  SELECT id, alloc_callsite_id, 0, '' FROM allocation
  UNION ALL SELECT chain.alloc_id, c.parent_id, chain.depth + 1,
    chain.text || ' < ' || coalesce(f.function, '?') || '@' || f.rel_pc
  FROM chain JOIN callsite c ON c.id = chain.callsite_id JOIN frame f ON f.id = c.frame_id)
SELECT a.kind || ' ' || a.size || (SELECT text FROM chain WHERE chain.alloc_id = a.id
  ORDER BY depth DESC LIMIT 1)
FROM allocation a ORDER BY 1
"""


def read(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    unwinders = sorted({row[0] for row in db.execute("SELECT unwinder FROM process")})
    stacks = [row[0] for row in db.execute(STACKS)]
    declined = db.execute("SELECT coalesce(sum(value), 0) FROM stats "
                          "WHERE name = 'shim_native_stack_by_libunwind'").fetchone()[0]
    return unwinders, stacks, declined


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    walked_unwinders, walked, declined = read(sys.argv[1])
    libunwind_unwinders, unwound, _ = read(sys.argv[2])
    label = (f"{len(walked)} allocations ({'/'.join(walked_unwinders)} against "
             f"{'/'.join(libunwind_unwinders)}; the walk declined {declined} stacks)")
    if walked == unwound:
        print(f"PASS the same stacks for all {label}")
        return 0
    differing = sum(1 for a, b in zip(walked, unwound) if a != b) + abs(len(walked) - len(unwound))
    first = next(((a, b) for a, b in zip(walked, unwound) if a != b), None)
    print(f"FAIL {differing} of {label} differ; first: {first}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
