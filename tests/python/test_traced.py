"""With the shim: a child Python process under `vramtrace run` (the built binaries, from the
environment CTest sets) uses the package, and its trace's `marker` table must hold exactly
what it did (docs/schema.md)."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from built_files import binary
from typing import Dict, List, Optional, Tuple

CHILD = Path(__file__).with_name("traced_child.py")

# What traced_child.py records, in start_seq order:
# (thread, type, name, depth, parent's name or None, innermost range enclosing a mark).
MAIN, WORKER = "main", "worker"
EXPECTED: List[Tuple[str, str, str, int, Optional[str], Optional[str]]] = [
    (MAIN, "mark", "start", 0, None, None),
    (MAIN, "range", "train", 0, None, None),
    (MAIN, "range", "load", 1, "train", None),
    (MAIN, "mark", "loading", 0, None, "load"),
]
for i in range(3):
    EXPECTED += [
        (MAIN, "range", f"iteration {i}", 1, "train", None),
        (MAIN, "range", "forward", 2, f"iteration {i}", None),
        (MAIN, "mark", f"batch {i}", 0, None, "forward"),
        (MAIN, "range", "backward", 2, f"iteration {i}", None),
    ]
    if i == 1:
        EXPECTED.append((MAIN, "mark", "recovered", 0, None, "iteration 1"))
EXPECTED += [
    (WORKER, "range", "worker", 0, None, None),
    (WORKER, "range", "worker step 0", 1, "worker", None),
    (WORKER, "mark", "working", 0, None, "worker step 0"),
    (MAIN, "mark", "époque ✓", 0, None, None),
]


class TracedTest(unittest.TestCase):
    rows: List[sqlite3.Row]

    @classmethod
    def setUpClass(cls) -> None:
        vramtrace_binary = binary("VRAMTRACE_BINARY")
        binary("VRAMTRACE_PRELOAD_LIBRARY")  # `vramtrace run` finds it; it must be built
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "child.db")
            run = subprocess.run(
                [vramtrace_binary, "run", "-o", trace, "--", sys.executable, str(CHILD)],
                capture_output=True, text=True, timeout=120)
            if run.returncode != 0 or run.stdout != "child done\n":
                raise AssertionError(f"vramtrace run failed ({run.returncode}):\n"
                                     f"{run.stdout}\n{run.stderr}")
            db = sqlite3.connect(trace)
            db.row_factory = sqlite3.Row
            try:
                cls.rows = db.execute("SELECT * FROM marker ORDER BY start_seq").fetchall()
                cls.processes = db.execute("SELECT count(*) FROM process").fetchone()[0]
            finally:
                db.close()

    def test_one_process(self) -> None:
        self.assertEqual(self.processes, 1)

    def test_every_marker_is_from_the_api_in_no_domain(self) -> None:
        self.assertTrue(self.rows)
        for row in self.rows:
            self.assertEqual((row["source"], row["domain"]), ("api", None), row["name"])
            self.assertEqual(row["upid"], self.rows[0]["upid"])

    def test_markers_exactly(self) -> None:
        by_id: Dict[int, sqlite3.Row] = {row["id"]: row for row in self.rows}
        main_utid = self.rows[0]["utid"]
        ranges = [row for row in self.rows if row["type"] == "range"]

        def enclosing(mark: sqlite3.Row) -> Optional[str]:
            inside = [r for r in ranges if r["utid"] == mark["utid"]
                      and r["start_seq"] < mark["start_seq"] < r["end_seq"]]
            return max(inside, key=lambda r: r["depth"])["name"] if inside else None

        def thread(row: sqlite3.Row) -> str:
            return MAIN if row["utid"] == main_utid else WORKER

        actual = [
            (thread(row), row["type"], row["name"], row["depth"],
             by_id[row["parent_id"]]["name"] if row["parent_id"] is not None else None,
             enclosing(row) if row["type"] == "mark" else None)
            for row in self.rows
        ]
        self.assertEqual(actual, EXPECTED)

    def test_marks_are_points_and_every_range_ended_on_its_thread(self) -> None:
        for row in self.rows:
            if row["type"] == "mark":
                self.assertIsNone(row["end_seq"], row["name"])
                self.assertIsNone(row["end_ns"], row["name"])
                self.assertIsNone(row["end_utid"], row["name"])
            else:
                self.assertIsNotNone(row["end_seq"], f"{row['name']} never ended")
                self.assertGreater(row["end_seq"], row["start_seq"], row["name"])
                self.assertGreaterEqual(row["end_ns"], row["start_ns"], row["name"])
                self.assertEqual(row["end_utid"], row["utid"], row["name"])

    def test_children_lie_within_their_parents(self) -> None:
        by_id = {row["id"]: row for row in self.rows}
        for row in self.rows:
            if row["parent_id"] is None:
                continue
            parent = by_id[row["parent_id"]]
            self.assertEqual(parent["utid"], row["utid"])
            self.assertLess(parent["start_seq"], row["start_seq"])
            self.assertGreater(parent["end_seq"], row["end_seq"])


if __name__ == "__main__":
    unittest.main()
