"""samples/torch/train_leak.py (elementwise model, AdamW, a planted leak) recorded: at every
"step N" mark the trace's live blocks must equal torch.cuda.memory_allocated(), its live
segments (device allocations and VMM mappings) memory_reserved(), and the most block bytes
live at once up to the mark max_memory_allocated(). samples/torch/compare_with_torch.py makes
the first two checks (and the allocator's reported totals), as it does on a real GPU."""

from __future__ import annotations

import json
import subprocess
import unittest

import torch_run
from torch_run import SAMPLES, TempDirTest, Trace

STEPS = 6


class MarkersTest(TempDirTest):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.trace = cls.path("train.db")
        result = torch_run.record(cls.trace, torch_run.python(SAMPLES / "train_leak.py",
                                                              "--steps", str(STEPS)))
        cls.output = cls.path("train.jsonl")
        with open(cls.output, "w") as out:
            out.write(result.stdout)
        cls.lines = torch_run.json_lines(result.stdout)

    def test_one_line_per_step(self) -> None:
        self.assertEqual([line["marker"] for line in self.lines],
                         [f"step {step}" for step in range(STEPS)])

    def test_compare_with_torch_passes_at_every_step(self) -> None:
        result = subprocess.run([torch_run.torch_python(), str(SAMPLES / "compare_with_torch.py"),
                                 self.trace, self.output], capture_output=True, text=True,
                                timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout.splitlines(), [
            f"PASS live blocks = memory_allocated() at all {STEPS} markers",
            f"PASS live segments = memory_reserved() at all {STEPS} markers",
            f"PASS allocator's reported totals = both at all {STEPS} markers",
        ])

    def test_block_peak_equals_max_memory_allocated(self) -> None:
        trace = Trace(self.trace)
        self.addCleanup(trace.close)
        got = {}
        want = {}
        for line in self.lines:
            seq = trace.marker_seq(line["marker"])
            got[line["marker"]] = trace.peak_before(seq, ["block"])
            want[line["marker"]] = line["max_allocated"]
        self.assertEqual(got, want)

    def test_a_wrong_counter_fails_the_comparison(self) -> None:
        # The comparison must be able to fail: one byte off at one step is caught.
        doctored = self.path("doctored.jsonl")
        lines = [dict(line) for line in self.lines]
        lines[2]["allocated"] += 512
        with open(doctored, "w") as out:
            out.writelines(json.dumps(line) + "\n" for line in lines)
        result = subprocess.run([torch_run.torch_python(), str(SAMPLES / "compare_with_torch.py"),
                                 self.trace, doctored], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 1, result.stdout)
        self.assertIn("FAIL live blocks = memory_allocated(): 1 of", result.stdout)


if __name__ == "__main__":
    torch_run.main()
