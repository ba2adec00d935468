"""vramtrace.pytest: a pytest run with the plugin, under `vramtrace run`, marks each test, and
`vramtrace gate` then lists the leaks by test: the leaking test with its line, the clean one
with none."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from built_files import binary

WORKLOAD = Path(__file__).with_name("pytest_workload") / "test_gpu_workload.py"
LIMITS = Path(__file__).with_name("pytest_workload") / "test_gpu_limits.py"


def python_with_pytest() -> str:
    """This interpreter if it has pytest, else Debian's (python3-pytest); empty if neither."""
    for python in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([python, "-c", "import pytest"], capture_output=True).returncode == 0:
            return python
    return ""


def planted_line(path: Path = WORKLOAD, plant: str = "leaky test") -> int:
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if text.rstrip().endswith("# PLANT: " + plant):
            return number
    raise AssertionError("no planted line")


class PytestRun(unittest.TestCase):
    """Runs pytest with the plugin over a workload file, under `vramtrace run`, once per class;
    skips where no Python has pytest."""

    @classmethod
    def run_pytest(cls, workload: Path, trace_name: str) -> None:
        cls.vramtrace = binary("VRAMTRACE_BINARY")
        binary("SIM_C10_CUDA_LIBRARY")
        python = python_with_pytest()
        if not python:
            raise unittest.SkipTest("no Python with pytest here (scripts/install-deps.sh "
                                    "installs python3-pytest)")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.trace = os.path.join(cls.tmp.name, trace_name)
        cls.env = dict(os.environ, SIMCUDA_DEVICE_COUNT="1", PYTHONDONTWRITEBYTECODE="1")
        cls.pytest_command = [python, "-m", "pytest", "-q", "-p", "vramtrace.pytest", "-p",
                              "no:cacheprovider", "-rf", str(workload)]
        cls.traced = subprocess.run(
            [cls.vramtrace, "run", "-o", cls.trace, "--", *cls.pytest_command],
            capture_output=True, text=True, timeout=180, env=cls.env)

    @classmethod
    def tearDownClass(cls) -> None:
        if hasattr(cls, "tmp"):
            cls.tmp.cleanup()


class PytestPluginTest(PytestRun):
    @classmethod
    def setUpClass(cls) -> None:
        cls.run_pytest(WORKLOAD, "pytest.db")
        cls.pytest = cls.traced
        gate = subprocess.run([cls.vramtrace, "gate", cls.trace, "--max-leaked-bytes", "0",
                               "--format", "json"], capture_output=True, text=True, timeout=60)
        cls.gate_status = gate.returncode
        cls.report = json.loads(gate.stdout) if gate.stdout else {}

    def test_pytest_passes_under_vramtrace(self) -> None:
        self.assertEqual(self.pytest.returncode, 0, self.pytest.stdout + self.pytest.stderr)
        self.assertIn("2 passed", self.pytest.stdout)

    def test_the_gate_fails_on_the_leak(self) -> None:
        self.assertEqual(self.gate_status, 1)
        self.assertEqual(self.report["checks"][0]["actual"], 4096)

    def test_leaks_are_listed_by_test_with_the_line_that_made_them(self) -> None:
        tests = {test["test"]: test for test in self.report["tests"]}
        leaky = f"{WORKLOAD.name}::test_leaky"
        clean = f"{WORKLOAD.name}::test_clean"
        self.assertEqual({name.split("/")[-1] for name in tests}, {leaky, clean})
        by_name = {name.split("/")[-1]: test for name, test in tests.items()}
        self.assertEqual((by_name[leaky]["bytes"], by_name[leaky]["count"]), (4096, 1))
        self.assertEqual((by_name[clean]["bytes"], by_name[clean]["count"]), (0, 0))
        frames = by_name[leaky]["leaks"][0]["stack"]
        self.assertIn(("test_leaky", planted_line()),
                      [(f["function"], f["line"]) for f in frames if f["language"] == "python"])


class PytestLimitsTest(PytestRun):
    """The limit_gpu_leaks and limit_gpu_memory marks: under `vramtrace run` exactly the tests
    over their limits fail, the leak with the line that made it; without it none is judged."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.run_pytest(LIMITS, "limits.db")
        cls.untraced = subprocess.run(cls.pytest_command, capture_output=True, text=True,
                                      timeout=180, env=cls.env)

    def test_exactly_the_tests_over_their_limits_fail(self) -> None:
        out = self.traced.stdout
        self.assertEqual(self.traced.returncode, 1, out + self.traced.stderr)
        self.assertIn("2 failed, 4 passed", out)
        failed = sorted(line.split("::")[-1].split()[0] for line in out.splitlines()
                        if line.startswith("FAILED "))
        self.assertEqual(failed, ["test_leak_over_its_limit", "test_peak_over_its_limit"], out)

    def test_the_leak_is_named_at_its_line(self) -> None:
        out = self.traced.stdout
        self.assertIn("vramtrace: the test leaked 4.0 KiB (4096 bytes) of GPU memory, "
                      "limit 0 B\n4.0 KiB (4096 bytes) in 1 allocation made since the "
                      "checkpoint still live (block level)", out)
        # Below the stand-in allocator's and ctypes' native frames, the test's own line.
        self.assertRegex(out, rf"    #\d+ test_leak_over_its_limit at {re.escape(str(LIMITS))}:"
                              rf"{planted_line(LIMITS, 'leak over the limit')} \(python\)\n")

    def test_the_peak_is_the_most_live_at_once(self) -> None:
        self.assertIn("vramtrace: the test held 2.0 MiB (2097152 bytes) of GPU memory at once, "
                      "limit 1.0 MiB", self.traced.stdout)

    def test_nothing_is_judged_outside_vramtrace(self) -> None:
        self.assertEqual(self.untraced.returncode, 0,
                         self.untraced.stdout + self.untraced.stderr)
        self.assertIn("6 passed", self.untraced.stdout)


if __name__ == "__main__":
    unittest.main()
