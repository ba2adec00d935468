"""Without the shim (a plain Python process): every call is a cheap no-op that returns as
documented, and context managers nest and let exceptions through."""

from __future__ import annotations

import subprocess
import sys
import threading
import timeit
import unittest

import vramtrace
from vramtrace import _markers


class UntracedTest(unittest.TestCase):
    def setUp(self) -> None:
        # These tests mean nothing if the process happens to run under `vramtrace run`.
        self.assertIsNone(_markers._api, "the shim is loaded: run these tests untraced")

    def test_version(self) -> None:
        self.assertEqual(vramtrace.__version__, "0.1.0")

    def test_mark_returns_none_for_any_name(self) -> None:
        for name in ["step", "", "é ✓", "\ud800 lone surrogate", "a\0b", "x" * 1000]:
            self.assertIsNone(vramtrace.mark(name))
        self.assertIsNone(vramtrace.mark(b"bytes"))  # type: ignore[arg-type]
        self.assertIsNone(vramtrace.mark(42))  # type: ignore[arg-type]

    def test_is_recording_is_false(self) -> None:
        self.assertIs(vramtrace.is_recording(), False)

    def test_ranges_nest_and_return_themselves(self) -> None:
        outer = vramtrace.range("outer")
        with outer as entered:
            self.assertIs(entered, outer)
            with vramtrace.range("inner"):
                with outer:  # the same object again, nested
                    pass
        self.assertEqual(outer.name, "outer")
        self.assertEqual(repr(outer), "Range('outer')")

    def test_range_lets_exceptions_through(self) -> None:
        with self.assertRaisesRegex(ValueError, "boom"):
            with vramtrace.range("failing"):
                raise ValueError("boom")
        with self.assertRaises(KeyboardInterrupt):
            with vramtrace.range("interrupted"):
                raise KeyboardInterrupt

    def test_range_as_decorator(self) -> None:
        @vramtrace.range("step")
        def step(x: int, *, y: int) -> int:
            """Doc."""
            return x + y

        self.assertEqual(step(1, y=2), 3)
        self.assertEqual(step.__name__, "step")
        self.assertEqual(step.__doc__, "Doc.")

        @vramtrace.range("failing")
        def failing() -> None:
            raise RuntimeError("from the body")

        with self.assertRaisesRegex(RuntimeError, "from the body"):
            failing()

    def test_iteration_counts_per_name(self) -> None:
        vramtrace.iteration.reset()
        self.addCleanup(vramtrace.iteration.reset)
        numbers = []
        for _ in range(3):
            with vramtrace.iteration() as i:
                numbers.append(i)
                with vramtrace.iteration("epoch") as e:
                    numbers.append(e)
        self.assertEqual(numbers, [0, 0, 1, 1, 2, 2])
        step = vramtrace.iteration("step")
        self.assertIsInstance(step, vramtrace.Iteration)
        self.assertIsInstance(step, vramtrace.Range)
        with step as first, step as second:  # each entry takes a number
            self.assertEqual((first, second), (0, 1))
        vramtrace.iteration.reset("step")
        with vramtrace.iteration("step") as again:
            self.assertEqual(again, 0)
        with vramtrace.iteration() as i:  # other names keep counting
            self.assertEqual(i, 3)

    def test_iteration_lets_exceptions_through_and_still_counts(self) -> None:
        vramtrace.iteration.reset()
        self.addCleanup(vramtrace.iteration.reset)
        with self.assertRaises(ZeroDivisionError):
            with vramtrace.iteration():
                1 / 0
        with vramtrace.iteration() as i:
            self.assertEqual(i, 1)

    def test_iteration_numbers_are_unique_across_threads(self) -> None:
        vramtrace.iteration.reset("threaded")
        self.addCleanup(vramtrace.iteration.reset)
        taken: list[int] = []
        lock = threading.Lock()

        def work() -> None:
            for _ in range(500):
                with vramtrace.iteration("threaded") as i:
                    with lock:
                        taken.append(i)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # Not assertEqual: its diff of two long lists takes minutes.
        duplicates = len(taken) - len(set(taken))
        self.assertTrue(sorted(taken) == list(range(4000)),
                        f"{len(taken)} numbers, {duplicates} duplicates, max {max(taken)}")

    def test_no_op_mark_costs_well_under_a_microsecond(self) -> None:
        # Generous for a loaded CI machine; measured about 30 ns on a quiet one.
        n = 100_000
        per_call = min(timeit.repeat(lambda: vramtrace.mark("step"), number=n, repeat=5)) / n
        self.assertLess(per_call, 0.5e-6)

    def test_module_version_and_untraced_status(self) -> None:
        run = subprocess.run([sys.executable, "-m", "vramtrace", "--version"],
                             capture_output=True, text=True, check=True)
        self.assertEqual(run.stdout, "vramtrace 0.1.0\n")
        run = subprocess.run([sys.executable, "-m", "vramtrace"],
                             capture_output=True, text=True, check=True)
        self.assertIn("not loaded", run.stdout)


if __name__ == "__main__":
    unittest.main()
