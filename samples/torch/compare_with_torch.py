"""Checks a trace against the allocator's own counters, marker by marker.

    python compare_with_torch.py TRACE.db OUTPUT.jsonl

OUTPUT.jsonl holds the lines a sample printed after each of its markers:
{"marker": NAME, "allocated": N, "reserved": N} with torch.cuda.memory_allocated() and
memory_reserved() at that moment (train_leak.py, eval_without_no_grad.py). For each marker
the trace is read at the marker's sequence number, three ways:

- blocks: the bytes of the allocator blocks live then (kind `block`), which must equal
  `allocated`;
- segments: the bytes of the allocator's segments live then, which must equal `reserved`:
  VMM mappings (expandable segments), and device allocations that held a block. Device memory
  that cuBLAS, cuBLASLt or cuDNN take for themselves held no block, and torch does not count
  it;
- reported: the allocator's totals carried by its last report before the marker, which must
  equal both.

Prints one PASS or FAIL line per check with the first mismatch, and exits 1 on a FAIL, 2 when
the inputs cannot be read. Standard library only (sqlite3), so it runs wherever the sample
does."""

import json
import sqlite3
import sys


def kind_ids(db: sqlite3.Connection) -> dict:
    return {name: kind for kind, name in db.execute("SELECT id, name FROM allocation_kind")}


def live_bytes(db: sqlite3.Connection, upid: int, seq: int, kinds: list) -> int:
    marks = ",".join("?" * len(kinds))
    (total,) = db.execute(
        f"SELECT ifnull(sum(size), 0) FROM allocation WHERE upid = ? AND result = 0 "
        f"AND kind IN ({marks}) AND alloc_seq < ? AND (free_seq IS NULL OR free_seq > ?)",
        (upid, *kinds, seq, seq)).fetchone()
    return total


def segment_bytes(db: sqlite3.Connection, upid: int, seq: int, kinds: dict) -> int:
    """Live VMM mappings, and live device allocations that some block was made in."""
    (total,) = db.execute(
        "SELECT ifnull(sum(size), 0) FROM allocation WHERE upid = ?1 AND result = 0 "
        "AND alloc_seq < ?2 AND (free_seq IS NULL OR free_seq > ?2) "
        "AND (kind = ?3 OR (kind = ?4 AND id IN "
        "     (SELECT segment_id FROM allocation WHERE upid = ?1 AND kind = ?5 "
        "      AND segment_id IS NOT NULL)))",
        (upid, seq, kinds["vmm_mapping"], kinds["device"], kinds["block"])).fetchone()
    return total


def reported_totals(db: sqlite3.Connection, upid: int, seq: int, block: int):
    """(allocated, reserved) from the allocator's last report before `seq`, or None."""
    row = db.execute(
        "SELECT allocated, reserved FROM ("
        "  SELECT alloc_seq AS seq, allocator_allocated AS allocated,"
        "         allocator_reserved AS reserved"
        "  FROM allocation WHERE upid = ?1 AND kind = ?2 AND alloc_seq < ?3"
        "  UNION ALL"
        "  SELECT free_seq, free_allocator_allocated, free_allocator_reserved"
        "  FROM allocation WHERE upid = ?1 AND kind = ?2 AND free_seq < ?3"
        ") ORDER BY seq DESC LIMIT 1", (upid, block, seq)).fetchone()
    return None if row is None else (row[0], row[1])


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
        kinds = kind_ids(db)
        lines = [json.loads(line) for line in open(sys.argv[2]) if line.startswith("{")]
    except (OSError, sqlite3.Error, ValueError) as error:
        print(f"compare_with_torch: {error}", file=sys.stderr)
        return 2
    samples = [line for line in lines if "marker" in line]
    if not samples:
        print("FAIL no marker lines in the sample's output")
        return 1
    mismatches = {"blocks": [], "segments": [], "reported": []}
    missing = []
    for sample in samples:
        row = db.execute("SELECT upid, start_seq FROM marker WHERE name = ? AND type = 'mark' "
                         "ORDER BY start_seq LIMIT 1", (sample["marker"],)).fetchone()
        if row is None:
            missing.append(sample["marker"])
            continue
        upid, seq = row
        blocks = live_bytes(db, upid, seq, [kinds["block"]])
        segments = segment_bytes(db, upid, seq, kinds)
        reported = reported_totals(db, upid, seq, kinds["block"])
        want = (sample["allocated"], sample["reserved"])
        if blocks != want[0]:
            mismatches["blocks"].append(f"{sample['marker']}: trace {blocks}, torch {want[0]}")
        if segments != want[1]:
            mismatches["segments"].append(f"{sample['marker']}: trace {segments}, torch {want[1]}")
        if reported != want:
            mismatches["reported"].append(f"{sample['marker']}: trace {reported}, torch {want}")
    checked = len(samples) - len(missing)
    failed = bool(missing)
    if missing:
        print(f"FAIL {len(missing)} markers not in the trace, first: {missing[0]!r}")
    labels = {"blocks": "live blocks = memory_allocated()",
              "segments": "live segments = memory_reserved()",
              "reported": "allocator's reported totals = both"}
    for check, label in labels.items():
        if mismatches[check]:
            failed = True
            print(f"FAIL {label}: {len(mismatches[check])} of {checked} markers differ, "
                  f"first: {mismatches[check][0]}")
        else:
            print(f"PASS {label} at all {checked} markers")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
