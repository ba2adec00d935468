"""Python stacks end to end (issue #4): torch_like_train.py, a training loop over the
stand-in caching allocator, runs under `vramtrace run`; `leaks` and `oom` must name its lines.

Run by CTest, which sets VRAMTRACE_BINARY, VRAMTRACE_PRELOAD_LIBRARY and
SIM_C10_CUDA_LIBRARY to the built files."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

from built_files import binary
from planted import SCRIPT, planted_line
from typing import Any, Dict, List, Tuple


def python_frames(stack: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [frame for frame in stack if frame.get("language") == "python"]


class PythonStacksTest(unittest.TestCase):
    planted: Dict[str, Any]
    leaks: Dict[str, Any]
    segment_leaks: Dict[str, Any]
    ooms: Dict[str, Any]
    stats: Dict[str, int]

    @classmethod
    def setUpClass(cls) -> None:
        vramtrace = binary("VRAMTRACE_BINARY")
        binary("VRAMTRACE_PRELOAD_LIBRARY")
        binary("SIM_C10_CUDA_LIBRARY")
        cls.tmp = tempfile.TemporaryDirectory()

        def record(name: str, *run_options: str, **extra_env: str) -> Tuple[str, Dict[str, Any]]:
            trace = os.path.join(cls.tmp.name, name)
            env = dict(os.environ, SIMCUDA_DEVICE_MEMORY="1GiB", SIMCUDA_DEVICE_COUNT="1",
                       **extra_env)
            run = subprocess.run([vramtrace, "run", *run_options, "-o", trace, "--",
                                  sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=120,
                                 env=env)
            if run.returncode != 0:
                raise AssertionError(f"vramtrace run failed ({run.returncode}):\n"
                                     f"{run.stdout}\n{run.stderr}")
            return trace, json.loads(run.stdout.strip().splitlines()[-1])

        trace, cls.planted = record("train.db")
        # The fixed script, also with the reading of frames without the GIL turned off.
        fixed_trace, cls.fixed = record("fixed.db", RELEASE_LOSSES="1",
                                        VRAMTRACE_PYTHON_WITHOUT_GIL="0")

        def report(*args: str, trace: str = trace) -> Dict[str, Any]:
            out = subprocess.run([vramtrace, *args, "--format", "json", trace],
                                 capture_output=True, text=True, timeout=60)
            if out.returncode != 0:
                raise AssertionError(f"vramtrace {' '.join(args)} failed: {out.stderr}")
            return json.loads(out.stdout)

        cls.leaks = report("leaks")
        cls.segment_leaks = report("leaks", "--level", "segment")
        cls.ooms = report("oom")
        cls.fixed_leaks = report("leaks", trace=fixed_trace)
        cls.stats = cls.read_stats(trace)
        cls.fixed_stats = cls.read_stats(fixed_trace)
        # A wrong layout (every offset moved): the first walk must reject it, not fault.
        skewed_trace, cls.skewed = record("skewed.db", VRAMTRACE_TEST_PYTHON_LAYOUT_SKEW="8")
        cls.skewed_stats = cls.read_stats(skewed_trace)
        cls.without_gil_stacks = cls.python_stacks_of(trace, "background_without_gil")
        cls.trace = trace
        # Frees have stacks only when asked.
        cls.free_stacks_trace, _ = record("free_stacks.db", "--free-stacks")
        cls.free_stacks_stats = cls.read_stats(cls.free_stacks_trace)

    @staticmethod
    def read_stats(trace: str) -> Dict[str, int]:
        db = sqlite3.connect(trace)
        try:
            return dict(db.execute("SELECT name, value FROM stats").fetchall())
        finally:
            db.close()

    @staticmethod
    def python_stacks_of(trace: str, function: str,
                         column: str = "alloc_callsite_id") -> List[List[Tuple[str, int]]]:
        """The Python frames (function, line), innermost first, of every allocation whose
        stack (`column`: its allocation's or its free's) passes through `function`."""
        db = sqlite3.connect(trace)
        try:
            stacks = []
            for (leaf,) in db.execute(f"SELECT {column} FROM allocation "
                                      f"WHERE {column} IS NOT NULL ORDER BY id"):
                frames = db.execute(
                    "WITH RECURSIVE chain(id, parent_id, frame_id, hops) AS ("
                    "  SELECT id, parent_id, frame_id, 0 FROM callsite WHERE id = ?"
                    "  UNION ALL SELECT c.id, c.parent_id, c.frame_id, chain.hops + 1"
                    "  FROM callsite c JOIN chain ON c.id = chain.parent_id)"
                    "SELECT f.function, f.line FROM chain JOIN frame f ON f.id = chain.frame_id "
                    "WHERE f.language = 'python' ORDER BY chain.hops", (leaf,)).fetchall()
                if any(name == function for name, _ in frames):
                    stacks.append(frames)
            return stacks
        finally:
            db.close()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.tmp.cleanup()

    def test_the_script_did_what_it_plants(self) -> None:
        self.assertTrue(self.planted["oom_seen"])
        self.assertEqual(self.planted["active_blocks"], self.planted["steps"])

    def test_leaks_name_the_planted_leak_by_python_file_and_line_at_block_level(self) -> None:
        self.assertEqual(self.leaks["level"], "block")
        self.assertEqual(len(self.leaks["leaks"]), 1, self.leaks["leaks"])
        leak = self.leaks["leaks"][0]
        self.assertEqual(leak["level"], "block")
        self.assertEqual(leak["kind"], "block")
        self.assertEqual(leak["count"], self.planted["steps"])
        self.assertEqual(leak["bytes"], self.planted["steps"] * self.planted["loss_bytes"])
        self.assertEqual(self.leaks["total_bytes"], self.planted["allocated_bytes"])
        frames = python_frames(leak["stack"])
        # Innermost first: the constructor's call into the allocator, the line that made the
        # loss, the loop that kept it, and the module's call of train().
        self.assertEqual([(f["function"], f["line"]) for f in frames[:3]],
                         [("Tensor.__init__", planted_line("tensor allocation")),
                          ("forward", planted_line("loss")),
                          ("train", planted_line("the leak (kept beyond the step)") - 1)])
        self.assertEqual(frames[-1]["function"], "<module>")
        for frame in frames:
            self.assertEqual(frame["file"], str(SCRIPT))
            self.assertEqual(frame["module"], str(SCRIPT))

    def test_the_text_report_opens_on_the_python_line(self) -> None:
        """Python-first: the allocation site, the ctypes and libffi frames folded into one
        line, then the script's own line; --native shows every frame."""
        vramtrace = binary("VRAMTRACE_BINARY")

        def frame_lines(*args: str) -> List[str]:
            out = subprocess.run([vramtrace, "leaks", *args, self.trace], capture_output=True,
                                 text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            return [line.strip() for line in out.stdout.splitlines() if line.startswith("    #")]

        lines = frame_lines()
        first_three = lines[:3]
        self.assertTrue(any(f"{SCRIPT}:{planted_line('tensor allocation')}" in line
                            for line in first_three), lines)
        self.assertTrue(any(" frames in " in line and line.endswith("]") for line in first_three),
                        lines)
        stack = self.leaks["leaks"][0]["stack"]
        native = frame_lines("--native")
        self.assertEqual(len(native), len(stack))
        self.assertLess(len(lines), len(native))

    def test_python_frames_stand_where_the_interpreter_was(self) -> None:
        stack = self.leaks["leaks"][0]["stack"]
        languages = [frame["language"] for frame in stack]
        first = languages.index("python")
        last = len(languages) - 1 - languages[::-1].index("python")
        # One run of Python frames, native code (the allocator, ctypes) inside it, and no
        # interpreter frame left: none of the native frames is _PyEval_EvalFrameDefault.
        self.assertEqual(set(languages[first:last + 1]), {"python"})
        self.assertGreater(first, 0)
        self.assertIn("sim_alloc", [f["function"] for f in stack[:first]])
        self.assertFalse([f for f in stack if "EvalFrame" in (f["function"] or "")])

    def test_the_cache_at_exit_is_cache_not_a_leak(self) -> None:
        # At exit the allocator holds the losses' small segment and the evaluation's large one;
        # all of it but the losses' blocks is cache, and none of it is leaked.
        cached = self.leaks["cached"]
        self.assertEqual(cached["bytes"],
                         self.planted["reserved_bytes"] - self.planted["allocated_bytes"])
        self.assertEqual(cached["count"], self.planted["segments"])
        self.assertEqual(self.planted["segments"], 2)
        # At segment level, the cached segments are the live cudaMallocs.
        self.assertEqual(self.segment_leaks["level"], "segment")
        self.assertEqual(self.segment_leaks["total_bytes"], self.planted["reserved_bytes"])

    def test_without_the_leak_the_cache_is_reported_and_nothing_leaked(self) -> None:
        self.assertEqual(self.fixed["allocated_bytes"], 0)
        self.assertGreater(self.fixed["reserved_bytes"], 0)
        report = self.fixed_leaks
        self.assertEqual(report["level"], "block")
        self.assertEqual((report["total_bytes"], report["total_count"], report["leaks"]),
                         (0, 0, []))
        self.assertEqual(report["cached"], {"bytes": self.fixed["reserved_bytes"],
                                            "count": self.fixed["segments"]})

    def test_oom_shows_the_failed_requests_their_line_and_the_live_blocks(self) -> None:
        ooms = self.ooms["ooms"]
        # cudaMalloc fails, the allocator empties its cache, cudaMalloc fails again, and the
        # allocator reports the OOM: each failed call is an OOM record.
        self.assertEqual([(o["api"], o["kind"]) for o in ooms],
                         [("cudaMalloc", "device"), ("cudaMalloc", "device"),
                          ("c10::reportOutOfMemoryToProfiler", "block")])
        for oom in ooms:
            self.assertEqual(oom["requested_bytes"], self.planted["oom_request"])
            lines = [(f["function"], f["line"]) for f in python_frames(oom["stack"])]
            self.assertEqual(lines[:2], [("Tensor.__init__", planted_line("tensor allocation")),
                                         ("planted_oom", planted_line("oom request"))])
        # Live at the allocator's OOM: the kept losses, by the line that made them.
        live = ooms[-1]["live"]
        self.assertEqual(live["total_count"], self.planted["steps"])
        self.assertEqual(live["total_bytes"], self.planted["steps"] * self.planted["loss_bytes"])
        self.assertIn(("forward", planted_line("loss")),
                      [(f["function"], f["line"]) for f in python_frames(live["top"][0]["stack"])])

    def test_frames_of_threads_without_the_gil_are_read_directly(self) -> None:
        # ctypes.CDLL releases the GIL around sim_alloc and sim_free: three of each. The
        # allocations' Python frames are read without the C API (preload/python_layout.h); the
        # frees go without stacks (no --free-stacks).
        self.assertEqual(self.stats.get("python_stack_read_without_gil"), 3)
        self.assertNotIn("python_stack_without_gil", self.stats)
        self.assertNotIn("shim_python_layout_rejected", self.stats)
        line = planted_line("without gil")
        self.assertEqual(len(self.without_gil_stacks), 3)
        for frames in self.without_gil_stacks:
            self.assertEqual(frames[0], ("Tensor.__init__", planted_line("tensor allocation")))
            self.assertIn(("background_without_gil", line), frames)
            self.assertEqual(frames[-1][0], "<module>")

    def test_a_wrong_layout_is_rejected_once_and_the_program_runs_on(self) -> None:
        self.assertEqual(self.skewed["active_blocks"], self.planted["active_blocks"])
        self.assertEqual(self.skewed_stats.get("shim_python_layout_rejected"), 1)
        self.assertEqual(self.skewed_stats.get("python_stack_without_gil"), 3)
        self.assertNotIn("python_stack_read_without_gil", self.skewed_stats)

    def test_turned_off_threads_without_the_gil_keep_native_stacks_and_are_counted(self) -> None:
        self.assertEqual(self.fixed_stats.get("python_stack_without_gil"), 3)
        self.assertNotIn("python_stack_read_without_gil", self.fixed_stats)

    def test_frees_have_python_stacks_only_with_free_stacks(self) -> None:
        def freed(trace: str) -> Tuple[int, int]:
            db = sqlite3.connect(trace)
            try:
                return db.execute("SELECT count(*), count(free_callsite_id) FROM allocation "
                                  "WHERE free_seq IS NOT NULL").fetchone()
            finally:
                db.close()

        frees, with_stack = freed(self.trace)
        self.assertGreater(frees, 0)
        self.assertEqual(with_stack, 0)
        frees, with_stack = freed(self.free_stacks_trace)
        self.assertEqual(with_stack, frees)
        # The three frees without the GIL, by their Python line, as the allocations are.
        self.assertEqual(self.free_stacks_stats.get("python_stack_read_without_gil"), 6)
        stacks = self.python_stacks_of(self.free_stacks_trace, "background_without_gil",
                                       column="free_callsite_id")
        self.assertEqual(len(stacks), 3)
        for frames in stacks:
            self.assertEqual(frames[0], ("Tensor.__del__", planted_line("tensor free")))
            self.assertIn(("background_without_gil", planted_line("without gil free")), frames)

if __name__ == "__main__":
    unittest.main()
