"""A planted per-iteration leak (tensors kept in a list) in a real PyTorch loop:
- `vramtrace leaks --at done` (the workload's last mark, before Python's teardown frees the
  list) reports it at the block level, at its Python file and line, with its count and
  bytes, and the allocator's segments as cache, not leaks; so does `vramtrace leaks` at the
  end, which for a Python process is where its interpreter began to finalize;
- `vramtrace leaks --growth iteration` (vramtrace.iteration()'s "iteration N" ranges) finds
  it growing by one tensor per iteration;
- torch.cuda.empty_cache() shows in the trace as segments freed, as many bytes as
  memory_reserved() dropped by."""

from __future__ import annotations

import unittest

import torch_run
from torch_run import WORKLOADS, TempDirTest, Trace

SCRIPT = WORKLOADS / "leak_loop.py"


class LeaksTest(TempDirTest):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.trace = cls.path("leak.db")
        result = torch_run.record(cls.trace, torch_run.python(SCRIPT))
        lines = torch_run.json_lines(result.stdout)
        cls.counters = {line["marker"]: line for line in lines if "marker" in line}
        cls.planted = lines[-1]
        cls.line = torch_run.planted_line(SCRIPT, "kept per iteration")
        cls.leaks = torch_run.report("leaks", cls.trace, "--at", "done")
        cls.leaks_at_end = torch_run.report("leaks", cls.trace)

    def planted_entry(self, entries):
        """The entry whose stack has the planted line as its innermost Python frame."""
        found = [entry for entry in entries
                 if (torch_run.python_frames(entry["stack"]) or [{}])[0].get("line") == self.line
                 and str(torch_run.python_frames(entry["stack"])[0].get("file", "")).endswith(
                     "leak_loop.py")]
        self.assertEqual(len(found), 1, f"no single entry at leak_loop.py:{self.line}: {entries}")
        return found[0]

    def test_planted_leak_at_block_level_with_its_line(self) -> None:
        self.assertEqual(self.leaks["level"], "block")
        self.assertTrue(self.leaks["allocator_events"])
        entry = self.planted_entry(self.leaks["leaks"])
        self.assertEqual((entry["kind"], entry["level"]), ("block", "block"))
        iterations, size = self.planted["iterations"], self.planted["planted_bytes"]
        self.assertEqual((entry["count"], entry["bytes"]), (iterations, iterations * size))
        frame = torch_run.python_frames(entry["stack"])[0]
        self.assertEqual(frame["function"], "step")

    def test_only_the_kept_tensors_leak(self) -> None:
        iterations, size = self.planted["iterations"], self.planted["planted_bytes"]
        self.assertEqual((self.leaks["total_count"], self.leaks["total_bytes"]),
                         (iterations, iterations * size),
                         [(e["kind"], e["bytes"], e["count"]) for e in self.leaks["leaks"]])

    def test_segments_at_exit_are_cache_not_leaks(self) -> None:
        after = self.counters["after empty_cache"]
        # At the end (where the interpreter began to finalize) as at "done": the kept tensors
        # are still live, and the segments' other bytes are cache.
        for leaks, kept in ((self.leaks, after["allocated"]),
                            (self.leaks_at_end, after["allocated"])):
            self.assertNotIn("device", [entry["kind"] for entry in leaks["leaks"]])
            self.assertEqual(leaks["level"], "block")
            # The segments torch reserved at its last counters, less the live tensors.
            self.assertEqual(leaks["cached"]["bytes"], after["reserved"] - kept)
            self.assertGreater(leaks["cached"]["count"], 0)

    def test_planted_leak_at_the_end_of_the_trace(self) -> None:
        entry = self.planted_entry(self.leaks_at_end["leaks"])
        iterations, size = self.planted["iterations"], self.planted["planted_bytes"]
        self.assertEqual((entry["count"], entry["bytes"]), (iterations, iterations * size))

    def test_growth_finds_one_tensor_per_iteration(self) -> None:
        growth = torch_run.report("leaks", self.trace, "--growth", "iteration")
        self.assertEqual([process["iterations"] for process in growth["processes"]],
                         [self.planted["iterations"]])
        entry = self.planted_entry(growth["growing"])
        self.assertEqual(entry["bytes_per_iteration"], self.planted["planted_bytes"])
        size = self.planted["planted_bytes"]
        self.assertEqual(entry["bytes"],
                         [size * (index + 1) for index in range(self.planted["iterations"])])

    def test_empty_cache_frees_segments(self) -> None:
        trace = Trace(self.trace)
        self.addCleanup(trace.close)
        before = trace.marker_seq("before empty_cache")
        after = trace.marker_seq("after empty_cache")
        freed = trace.db.execute(
            "SELECT count(*), ifnull(sum(size), 0) FROM allocation WHERE result = 0 AND kind = ? "
            "AND free_seq > ? AND free_seq < ?", (trace.kinds["device"], before, after)).fetchone()
        want = (self.counters["before empty_cache"]["reserved"]
                - self.counters["after empty_cache"]["reserved"])
        self.assertGreater(want, 0)
        self.assertGreater(freed[0], 0)
        self.assertEqual(freed[1], want)
        self.assertEqual(trace.live_bytes(after, ["device"]),
                         self.counters["after empty_cache"]["reserved"])


if __name__ == "__main__":
    torch_run.main()
