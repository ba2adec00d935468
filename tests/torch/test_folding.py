"""A long steady loop of real PyTorch recorded with its repeated bins folded (`vramtrace run`'s
default) and kept in full (`--keep all`): the folded trace holds runs, and both give the same
roles, leaks, peak, summary, oom and memory_viz export, at the ends, the peak and at moments
inside folded stretches. The leak that begins late and the OOM the loop survives are kept in
full and found at their lines, with the numbers the program itself reports."""

from __future__ import annotations

import json
import pickle
import sqlite3
import subprocess
import unittest

import torch_run
from torch_run import WORKLOADS, TempDirTest

SCRIPT = WORKLOADS / "leak_late.py"
STEPS, LEAK_FROM, OOM_AT = "2600", "2400", "1500"


def without_run_details(doc, base: int = 0):
    """A report's JSON without what differs between two runs of one program: times, pids, the
    trace's name, event numbers, and the stats that say what was folded; addresses (the
    simulated GPU's memory is the host's, placed anew each run) less the run's first, `base`."""
    if isinstance(doc, list):
        return [without_run_details(item, base) for item in doc]
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
        if "addr" in key and isinstance(value, int) and value >= base > 0:
            value -= base
        kept[key] = without_run_details(value, base)
    return kept


def memory_viz_digest(snapshot, base: int):
    """What a memory_viz snapshot says, small enough to compare: each trace entry's action,
    address (less `base`), size and stack, and each segment's blocks. A stack that the pickle
    shares between entries is read once."""
    stacks = {}

    def stack(frames):
        key = id(frames)
        if key not in stacks:
            stacks[key] = (frames, tuple((f["filename"], f["line"], f["name"]) for f in frames))
        return stacks[key][1]

    traces = [[(entry["action"], entry.get("addr", base) - base, entry.get("size"),
                stack(entry["frames"])) for entry in device]
              for device in snapshot["device_traces"]]
    segments = sorted((segment["address"] - base, segment["total_size"],
                       tuple((block["size"], block["requested_size"], block["state"])
                             for block in segment["blocks"]))
                      for segment in snapshot["segments"])
    return traces, segments


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
                 trace, "--", *torch_run.python(SCRIPT, STEPS, LEAK_FROM, OOM_AT)],
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

    def base(self, keep: str) -> int:
        """The run's lowest block address: where the simulated GPU's memory began."""
        return self.query(keep, "SELECT min(a.address) FROM allocation AS a JOIN allocation_kind "
                                "AS k ON k.id = a.kind WHERE k.name = 'block' AND a.address > 0")

    def same_report(self, command) -> None:
        reports = [without_run_details(torch_run.report(command[0], self.traces[keep],
                                                        *command[1:]), self.base(keep))
                   for keep in ("folded", "all")]
        self.assertEqual(json.dumps(reports[0], sort_keys=True),
                         json.dumps(reports[1], sort_keys=True))

    def moments_inside_runs(self):
        """The steps whose "loss" mark falls inside a folded stretch of the folded trace, as
        moments both traces have (loss#K: the K-th step's), at most three."""
        with sqlite3.connect(self.traces["folded"]) as db:
            runs = db.execute("SELECT first_alloc_seq, last_seq FROM allocation_chunk_repeat "
                              "ORDER BY first_alloc_seq").fetchall()
            marks = [seq for (seq,) in db.execute(
                "SELECT start_seq FROM marker WHERE name = 'loss' ORDER BY start_seq")]
        inside = [k for k, seq in enumerate(marks, start=1)
                  if any(first <= seq <= last for first, last in runs)]
        return [f"loss#{k}" for k in inside[::max(1, len(inside) // 3)][:3]]

    def test_moments_inside_folded_stretches_give_the_same_answers(self) -> None:
        inside = self.moments_inside_runs()
        self.assertTrue(inside, "no step's mark lies in a folded stretch")
        # And one of the leak's steps, kept in full.
        for moment in (*inside, f"loss#{int(LEAK_FROM) + 100}"):
            for command in (["roles", "--at", moment], ["leaks", "--at", moment],
                            ["frag", "--at", moment]):
                with self.subTest(command=command):
                    self.same_report(command)

    def test_the_oom_the_loop_survived_is_found_at_its_line(self) -> None:
        self.same_report(["oom"])
        line = torch_run.planted_line(SCRIPT, "too large")
        for keep in ("folded", "all"):
            planted = self.planted[keep]
            self.assertEqual(planted["oom_at"], int(OOM_AT))
            ooms = [oom for oom in torch_run.report("oom", self.traces[keep])["ooms"]
                    if oom["kind"] == "block"]
            self.assertEqual(len(ooms), 1, f"{keep}: {ooms}")
            self.assertEqual(ooms[0]["requested_bytes"], planted["oom_bytes"])
            frames = torch_run.python_frames(ooms[0]["stack"])
            self.assertEqual(frames[0]["line"], line, f"{keep}: {frames}")

    def test_the_memory_viz_export_is_the_same(self) -> None:
        snapshots = []
        for keep in ("folded", "all"):
            out = self.path(f"{keep}.pickle")
            result = subprocess.run([torch_run.vramtrace_binary(), "export", self.traces[keep],
                                     "--memory-viz", out], capture_output=True, text=True,
                                    timeout=300)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(out, "rb") as file:
                snapshots.append(memory_viz_digest(pickle.load(file), self.base(keep)))
        self.assertGreater(len(snapshots[0][0][0]), 100_000)
        self.assertEqual(snapshots[0], snapshots[1])

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
