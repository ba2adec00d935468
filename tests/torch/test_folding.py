"""A long steady loop of real PyTorch recorded with its repeated bins folded (`vramtrace run`'s
default) and kept in full (`--keep all`): the folded trace holds runs, and both give the same
roles, leaks, peak and summary. The leak that begins late is kept in full and found at its
line, with the count and bytes the program itself reports."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import unittest

import torch_run
from torch_run import WORKLOADS, TempDirTest

SCRIPT = WORKLOADS / "leak_late.py"
STEPS, LEAK_FROM = "2600", "2400"


def without_run_details(doc):
    """A report's JSON without what differs between two runs of one program: times, pids, the
    trace's name, event numbers, and the stats that say what was folded."""
    if isinstance(doc, list):
        return [without_run_details(item) for item in doc]
    if not isinstance(doc, dict):
        return doc
    kept = {}
    for key, value in doc.items():
        if key in ("trace", "pid", "tid", "ppid", "seq", "filters") or "ns" in key or "time" in key:
            continue
        if key == "stats":
            value = [s for s in value if not s["name"].startswith("storage_folded_")]
        if key == "text" and isinstance(value, str) and value.startswith("pid "):
            value = value.split(": ", 1)[-1]
        kept[key] = without_run_details(value)
    return kept


class FoldingTest(TempDirTest):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.traces = {}
        cls.planted = {}
        for keep in ("folded", "all"):
            trace = cls.path(f"{keep}.db")
            result = subprocess.run(
                [*torch_run.simgpu(), torch_run.vramtrace_binary(), "run", "--keep", keep, "-o",
                 trace, "--", *torch_run.python(SCRIPT, STEPS, LEAK_FROM)],
                capture_output=True, text=True, env=torch_run.child_env(), timeout=300)
            if result.returncode != 0:
                raise AssertionError(f"vramtrace run --keep {keep} failed: {result.stderr}")
            cls.traces[keep] = trace
            cls.planted[keep] = torch_run.json_lines(result.stdout)[-1]

    def query(self, keep: str, sql: str) -> int:
        with sqlite3.connect(self.traces[keep]) as db:
            return db.execute(sql).fetchone()[0]

    def test_the_folded_trace_holds_runs_and_says_so(self) -> None:
        folded = self.query("folded", "SELECT coalesce(sum(repeats * count), 0) FROM "
                                      "allocation_chunk_repeat")
        self.assertGreater(folded, 10_000)
        self.assertEqual(self.query("folded", "SELECT value FROM stats WHERE name = "
                                              "'storage_folded_allocations'"), folded)
        self.assertEqual(self.query("all", "SELECT count(*) FROM allocation_chunk_repeat"), 0)
        blocks = "SELECT count(*) FROM allocation AS a JOIN allocation_kind AS k ON k.id = a.kind " \
                 "WHERE k.name = 'block'"
        self.assertEqual(self.query("folded", blocks), self.query("all", blocks))

    def test_reports_are_the_same_kept_or_folded(self) -> None:
        for command in (["roles"], ["roles", "--at", "peak"], ["leaks", "--at", "done"],
                        ["peak"], ["summary"]):
            with self.subTest(command=command):
                reports = [without_run_details(torch_run.report(command[0], self.traces[keep],
                                                                *command[1:]))
                           for keep in ("folded", "all")]
                self.assertEqual(json.dumps(reports[0], sort_keys=True),
                                 json.dumps(reports[1], sort_keys=True))

    def test_the_late_leak_is_found_at_its_line_with_the_programs_numbers(self) -> None:
        line = torch_run.planted_line(SCRIPT, "kept per step")
        for keep in ("folded", "all"):
            planted = self.planted[keep]
            self.assertEqual(planted["kept"], int(STEPS) - int(LEAK_FROM))
            leaks = torch_run.report("leaks", self.traces[keep], "--at", "done")["leaks"]
            found = [entry for entry in leaks
                     if (torch_run.python_frames(entry["stack"]) or [{}])[0].get("line") == line]
            self.assertEqual(len(found), 1, f"{keep}: {leaks}")
            self.assertEqual(found[0]["count"], planted["kept"])
            self.assertEqual(found[0]["bytes"], planted["kept_bytes"])


if __name__ == "__main__":
    unittest.main()
