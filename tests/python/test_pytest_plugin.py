"""vramtrace.pytest: a pytest run with the plugin, under `vramtrace run`, marks each test, and
`vramtrace gate` then lists the leaks by test: the leaking test with its line, the clean one
with none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

from built_files import binary

WORKLOAD = Path(__file__).with_name("pytest_workload") / "test_gpu_workload.py"


def python_with_pytest() -> str:
    """This interpreter if it has pytest, else Debian's (python3-pytest); empty if neither."""
    for python in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([python, "-c", "import pytest"], capture_output=True).returncode == 0:
            return python
    return ""


def planted_line() -> int:
    for number, text in enumerate(WORKLOAD.read_text().splitlines(), start=1):
        if text.rstrip().endswith("# PLANT: leaky test"):
            return number
    raise AssertionError("no planted line")


class PytestPluginTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls) -> None:
        vramtrace = binary("VRAMTRACE_BINARY")
        binary("SIM_C10_CUDA_LIBRARY")
        python = python_with_pytest()
        if not python:
            raise unittest.SkipTest("no Python with pytest here (scripts/install-deps.sh "
                                    "installs python3-pytest)")
        cls.tmp = tempfile.TemporaryDirectory()
        trace = os.path.join(cls.tmp.name, "pytest.db")
        env = dict(os.environ, SIMCUDA_DEVICE_COUNT="1", PYTHONDONTWRITEBYTECODE="1")
        cls.pytest = subprocess.run(
            [vramtrace, "run", "-o", trace, "--", python, "-m", "pytest", "-q", "-p",
             "vramtrace.pytest", "-p", "no:cacheprovider", str(WORKLOAD)],
            capture_output=True, text=True, timeout=180, env=env)
        gate = subprocess.run([vramtrace, "gate", trace, "--max-leaked-bytes", "0", "--format",
                               "json"], capture_output=True, text=True, timeout=60)
        cls.gate_status = gate.returncode
        cls.report = json.loads(gate.stdout) if gate.stdout else {}

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

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


if __name__ == "__main__":
    unittest.main()
