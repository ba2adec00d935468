"""The pytest plugin on samples/torch/test_gpu_limits.py with real PyTorch: under
`vramtrace run -- python -m pytest -p vramtrace.pytest`, exactly the two planted tests fail,
the kept tensor named at its line of the sample."""

from __future__ import annotations

import re

import torch_run
from torch_run import SAMPLES, TempDirTest

SAMPLE = SAMPLES / "test_gpu_limits.py"
PLANTED = {"test_keeps_a_tensor", "test_holds_too_much_at_once"}
ALL = PLANTED | {"test_frees_what_it_makes", "test_stays_under_its_peak"}


class PytestPluginTest(TempDirTest):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        # -p no:cacheprovider: nothing written into samples/; -rA: a line per test's outcome.
        cls.result = torch_run.record(
            cls.path("limits.db"),
            [torch_run.torch_python(), "-m", "pytest", "-p", "vramtrace.pytest",
             "-p", "no:cacheprovider", "-rA", "-q", str(SAMPLE)],
            cwd=cls.tmp, check=False)
        cls.outcomes = dict((name, outcome) for outcome, name in re.findall(
            r"^(PASSED|FAILED|ERROR) \S*::(\w+)", cls.result.stdout, re.MULTILINE))

    def test_exactly_the_planted_tests_fail(self) -> None:
        self.assertEqual(self.result.returncode, 1, self.result.stdout + self.result.stderr)
        self.assertEqual(set(self.outcomes), ALL, self.result.stdout)
        failed = {name for name, outcome in self.outcomes.items() if outcome != "PASSED"}
        self.assertEqual(failed, PLANTED, self.result.stdout)

    def test_the_kept_tensor_is_named_at_its_line(self) -> None:
        line = torch_run.planted_line(SAMPLE, "kept tensor")
        self.assertRegex(self.result.stdout,
                         rf"test_keeps_a_tensor at \S*test_gpu_limits\.py:{line}\b")

    def test_the_over_limit_test_says_its_peak(self) -> None:
        self.assertIn("vramtrace: the test held 32.0 MiB (33554432 bytes) of GPU memory at once, "
                      "limit 16.0 MiB", self.result.stdout)


if __name__ == "__main__":
    torch_run.main()
