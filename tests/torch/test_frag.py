"""`vramtrace frag --at MARK` against torch.cuda.memory_snapshot() at the same moment: the same
segments (address, total size) and the same active blocks (address, size), one for one. At a
peak reached by a new segment, the reports look at it with its tensor in it, as torch does."""

from __future__ import annotations

import json

import unittest

import torch_run
from torch_run import WORKLOADS, TempDirTest


class FragTest(TempDirTest):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.trace = cls.path("frag.db")
        result = torch_run.record(cls.trace, torch_run.python(WORKLOADS / "frag_snapshot.py"))
        (cls.snapshot,) = torch_run.json_lines(result.stdout)
        cls.frag = torch_run.report("frag", cls.trace, "--at", "snapshot")

    def test_segments_equal_the_snapshot(self) -> None:
        got = sorted([segment["address"], segment["size"]] for segment in self.frag["segments"])
        self.assertEqual(got, self.snapshot["segments"])
        # Small (2 MiB) and large segments both, or the workload is not testing what it says.
        self.assertIn(2 << 20, [size for _, size in got])
        self.assertGreater(len(got), 2)

    def test_used_blocks_equal_the_active_blocks(self) -> None:
        got = sorted([block["address"], block["size"]] for segment in self.frag["segments"]
                     for block in segment["blocks"] if block["state"] == "used")
        self.assertEqual(got, self.snapshot["active"])

    def test_totals_match_torch(self) -> None:
        used = sum(block["size"] for segment in self.frag["segments"]
                   for block in segment["blocks"] if block["state"] == "used")
        total = sum(segment["size"] for segment in self.frag["segments"])
        self.assertEqual((used, total), (self.snapshot["allocated"], self.snapshot["reserved"]))
        self.assertEqual(self.frag["total_free"], total - used)


class PeakAtNewSegmentTest(TempDirTest):
    """The allocator asks for a segment, then reports the block it made it for, a few events
    later: a peak taken between the two would show 4 GiB that a live tensor holds as free."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.trace = cls.path("peak.db")
        result = torch_run.record(cls.trace,
                                  torch_run.python(WORKLOADS / "peak_at_new_segment.py"))
        (cls.snapshot,) = torch_run.json_lines(result.stdout)

    def test_frag_at_the_peak_is_torchs_snapshot_then(self) -> None:
        frag = torch_run.report("frag", self.trace, "--at", "peak")
        got = sorted([segment["address"], segment["size"]] for segment in frag["segments"])
        self.assertEqual(got, self.snapshot["segments"])
        used = sorted([block["address"], block["size"]] for segment in frag["segments"]
                      for block in segment["blocks"] if block["state"] == "used")
        self.assertEqual(used, self.snapshot["active"])
        self.assertEqual(frag["total_free"],
                         self.snapshot["reserved"] - self.snapshot["allocated"])

    def test_no_advice_to_empty_a_cache_a_tensor_holds(self) -> None:
        summary = torch_run.report("summary", self.trace)
        self.assertNotIn("empty_cache", json.dumps(summary))
        leaks = torch_run.report("leaks", self.trace, "--at", "peak")
        self.assertEqual(leaks["total_bytes"], self.snapshot["allocated"])


if __name__ == "__main__":
    torch_run.main()
