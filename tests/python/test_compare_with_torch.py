"""samples/torch/compare_with_torch.py, the check that check.sh runs against real PyTorch,
run here against the stand-in caching allocator: the trace's live blocks and segments at each
marker must equal the allocator's own counters, and a doctored output must fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from built_files import binary

HERE = Path(__file__).resolve().parent
COMPARE = HERE.parent.parent / "samples" / "torch" / "compare_with_torch.py"
LOOP = HERE / "sim_marked_loop.py"


class CompareWithTorchTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        vramtrace = binary("VRAMTRACE_BINARY")
        binary("SIM_C10_CUDA_LIBRARY")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.trace = os.path.join(cls.tmp.name, "loop.db")
        cls.output = os.path.join(cls.tmp.name, "loop.jsonl")
        env = dict(os.environ, SIMCUDA_DEVICE_COUNT="1")
        with open(cls.output, "w") as out:
            run = subprocess.run([vramtrace, "run", "-o", cls.trace, "--", sys.executable,
                                  str(LOOP)], stdout=out, stderr=subprocess.PIPE, text=True,
                                 timeout=120, env=env)
        if run.returncode != 0:
            raise AssertionError(f"vramtrace run failed ({run.returncode}): {run.stderr}")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def compare(self, output: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(COMPARE), self.trace, output],
                              capture_output=True, text=True, timeout=60)

    def test_every_marker_agrees_with_the_allocator(self) -> None:
        result = self.compare(self.output)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout.splitlines(), [
            "PASS live blocks = memory_allocated() at all 8 markers",
            "PASS live segments = memory_reserved() at all 8 markers",
            "PASS allocator's reported totals = both at all 8 markers",
        ])

    def test_a_wrong_counter_fails_and_names_the_marker(self) -> None:
        lines = [json.loads(line) for line in open(self.output)]
        lines[5]["reserved"] += 512
        doctored = os.path.join(self.tmp.name, "doctored.jsonl")
        with open(doctored, "w") as out:
            out.writelines(json.dumps(line) + "\n" for line in lines)
        result = self.compare(doctored)
        self.assertEqual(result.returncode, 1)
        self.assertIn("PASS live blocks = memory_allocated() at all 8 markers", result.stdout)
        self.assertIn("FAIL live segments = memory_reserved(): 1 of 8 markers differ, "
                      "first: step 5", result.stdout)

    def test_unreadable_input_exits_2(self) -> None:
        result = self.compare(os.path.join(self.tmp.name, "missing.jsonl"))
        self.assertEqual(result.returncode, 2)


if __name__ == "__main__":
    unittest.main()
