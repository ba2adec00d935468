"""`vramtrace run --gate` and `vramtrace gate --junit` on a Python training loop (the stand-in
caching allocator through ctypes): the JUnit file, read with an XML parser as a CI server reads
it, has one test case per limit, and the broken one carries the leak's Python line."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ElementTree

from built_files import binary
from planted import SCRIPT, planted_line


class GateJunitTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        cls.vramtrace = binary("VRAMTRACE_BINARY")
        binary("SIM_C10_CUDA_LIBRARY")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.trace = os.path.join(cls.tmp.name, "train.db")
        env = dict(os.environ, SIMCUDA_DEVICE_MEMORY="1GiB", SIMCUDA_DEVICE_COUNT="1")
        cls.recorded = subprocess.run(
            [cls.vramtrace, "run", "-o", cls.trace, "--gate", "leaked_bytes=0,peak<=1GiB", "--",
             sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120, env=env)
        cls.junit = os.path.join(cls.tmp.name, "gate.xml")
        cls.gate = subprocess.run(
            [cls.vramtrace, "gate", cls.trace, "--max-leaked-bytes", "0", "--max-leaked-count",
             "100", "--junit", cls.junit], capture_output=True, text=True, timeout=60)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def test_run_gate_fails_the_job_on_the_leak_and_says_why_on_stderr(self) -> None:
        self.assertEqual(self.recorded.returncode, 1, self.recorded.stderr)
        self.assertIn("FAIL leaked_bytes (all processes): 3.0 KiB (3072 bytes), limit 0 B",
                      self.recorded.stderr)
        self.assertIn(f"train at {SCRIPT}:{planted_line('the leak (kept beyond the step)') - 1}",
                      self.recorded.stderr)

    def test_junit_has_a_case_per_limit_and_the_failure_carries_the_python_line(self) -> None:
        self.assertEqual(self.gate.returncode, 1, self.gate.stderr)
        root = ElementTree.parse(self.junit).getroot()
        self.assertEqual(root.tag, "testsuites")
        self.assertEqual((root.get("tests"), root.get("failures")), ("2", "1"))
        cases = {case.get("name"): case for case in root.iter("testcase")}
        self.assertEqual(set(cases), {"leaked_bytes (all processes)",
                                      "leaked_count (all processes)"})
        self.assertIsNone(cases["leaked_count (all processes)"].find("failure"))
        failure = cases["leaked_bytes (all processes)"].find("failure")
        self.assertIsNotNone(failure)
        self.assertEqual(failure.get("type"), "leaked_bytes")
        self.assertIn("3.0 KiB (3072 bytes) in 6 block allocations from:", failure.text)
        self.assertIn(f"forward at {SCRIPT}:{planted_line('loss')} (python)", failure.text)


if __name__ == "__main__":
    unittest.main()
