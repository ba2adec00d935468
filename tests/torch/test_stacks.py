"""A leaked tensor's stack shows the user's Python function and line, and torch's own Python
frames where the allocation went through them: nn.Module.__call__ (torch/nn/modules/module.py)
for a user module's forward, and torch/nn/modules/normalization.py and torch/nn/functional.py
for nn.LayerNorm's. The text report is Python-first: the user's line among a stack's first three
lines, libtorch's frames folded into one line that names the operator; `--native` shows every
frame, and the JSON marks the folded ones."""

from __future__ import annotations

import re
import subprocess
import unittest
from typing import Any, Dict, List

import torch_run
from torch_run import WORKLOADS, TempDirTest

SCRIPT = WORKLOADS / "module_leak.py"


def where(frame: Dict[str, Any]) -> str:
    return f"{frame['function']} at {frame['file']}:{frame['line']}"


class StacksTest(TempDirTest):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.trace = cls.path("module.db")
        cls.recording = torch_run.record(cls.trace, torch_run.python(SCRIPT))
        cls.leaks = torch_run.report("leaks", cls.trace, "--at", "done")["leaks"]

    def python_stack(self, innermost_file_suffix: str, line: int = 0) -> List[Dict[str, Any]]:
        """The Python frames of the one leak whose stack has SCRIPT's line LINE as a frame
        and whose innermost Python frame is in a file ending so."""
        found = []
        for entry in self.leaks:
            frames = torch_run.python_frames(entry["stack"])
            if not frames or not str(frames[0]["file"]).endswith(innermost_file_suffix):
                continue
            if any(str(f["file"]).endswith("module_leak.py") and f["line"] == line for f in frames):
                found.append(frames)
        self.assertEqual(len(found), 1, [[where(f) for f in torch_run.python_frames(e["stack"])]
                                         for e in self.leaks])
        return found[0]

    def test_user_module_forward_and_nn_module_call(self) -> None:
        line = torch_run.planted_line(SCRIPT, "kept module output")
        frames = self.python_stack("module_leak.py", line)
        self.assertEqual(frames[0]["function"], "Residual.forward")
        self.assertEqual(frames[0]["line"], torch_run.planted_line(SCRIPT, "residual output"))
        files = [str(f["file"]) for f in frames]
        call = [i for i, f in enumerate(files) if f.endswith("torch/nn/modules/module.py")]
        self.assertTrue(call, [where(f) for f in frames])
        collect = [i for i, f in enumerate(frames) if f["function"] == "collect"]
        self.assertEqual(len(collect), 1, [where(f) for f in frames])
        # Innermost first: forward, then torch's __call__ machinery, then the caller's line.
        self.assertLess(max(call), collect[0])
        self.assertEqual(frames[collect[0]]["line"], line)

    def test_torch_module_frames_of_layer_norm(self) -> None:
        line = torch_run.planted_line(SCRIPT, "kept norm output")
        frames = self.python_stack("torch/nn/functional.py", line)
        self.assertEqual(frames[0]["function"], "layer_norm")
        files = [str(f["file"]) for f in frames]
        norm = files.index(next(f for f in files if f.endswith("torch/nn/modules/normalization.py")))
        self.assertEqual(frames[norm]["function"], "LayerNorm.forward")
        collect = next(i for i, f in enumerate(frames) if f["function"] == "collect")
        self.assertLess(norm, collect)
        self.assertEqual(frames[collect]["line"], line)
        self.assertEqual(frames[-1]["function"], "<module>")

    def text_groups(self, *args: str) -> List[List[str]]:
        """`vramtrace leaks --at done ARGS` as text: each group's frame lines."""
        result = subprocess.run([torch_run.vramtrace_binary(), "leaks", self.trace, "--at", "done",
                                 *args], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        groups: List[List[str]] = []
        for line in result.stdout.splitlines():
            if line.endswith(" from:"):
                groups.append([])
            elif groups and line.startswith("    #"):
                groups[-1].append(line.strip())
        return groups

    def test_text_shows_the_users_line_among_the_first_three(self) -> None:
        residual = f"Residual.forward at {SCRIPT}:{torch_run.planted_line(SCRIPT, 'residual output')}"
        groups = [g for g in self.text_groups() if any(residual in line for line in g)]
        self.assertEqual(len(groups), 1, self.text_groups())
        first_three = groups[0][:3]
        self.assertTrue(any(residual in line for line in first_three), groups[0])
        # The allocation site first, then libtorch's frames folded into one line naming the
        # operator `x + ...` ran, then the user's line.
        self.assertIn("libc10_cuda.so", first_three[0])
        self.assertRegex(first_three[1], r"^#1-\d+ \[aten::add: \d+ frames in .*libtorch_cpu\.so")
        # nn.Module.__call__'s two frames are one line too.
        self.assertTrue(any("frames in nn.Module.__call__]" in line for line in groups[0]), groups[0])

    def test_native_shows_every_frame_and_json_marks_the_folded(self) -> None:
        residual_line = torch_run.planted_line(SCRIPT, "residual output")
        entry = next(e for e in self.leaks
                     if any(f["line"] == residual_line and str(f["file"]).endswith("module_leak.py")
                            for f in e["stack"]))
        stack = entry["stack"]
        native = [g for g in self.text_groups("--native")
                  if any(f"module_leak.py:{residual_line} " in line for line in g)]
        self.assertEqual(len(native), 1)
        self.assertEqual(len(native[0]), len(stack))
        for i, line in enumerate(native[0]):
            self.assertTrue(line.startswith(f"#{i} {stack[i]['function']}"), (i, line))
        self.assertTrue(any("THPVariable_add" in line for line in native[0]), native[0])
        # The JSON has every frame; the ones the text folds say into which line.
        folded = [f for f in stack if f.get("folded")]
        self.assertTrue(folded)
        self.assertFalse(stack[0].get("folded"))
        self.assertTrue(all(re.match(r"(aten::add: )?\d+ frames in ", f["folded_into"])
                            for f in folded), folded)
        self.assertFalse(any(f.get("folded") for f in stack
                             if f["language"] == "python" and f["function"] == "Residual.forward"))

    def test_the_runs_last_lines_name_the_users_line(self) -> None:
        """`vramtrace run` ends on the process, its peak, and the user's line of its largest
        leak: the kept tensors, held when the interpreter began to finalize (torch's own
        Python frames, like nn.functional's, are skipped for the program's)."""
        lines = [line for line in self.recording.stderr.splitlines() if line.startswith("vramtrace:")]
        self.assertEqual(len(lines), 3, self.recording.stderr)
        residual = torch_run.planted_line(SCRIPT, "residual output")
        norm = torch_run.planted_line(SCRIPT, "kept norm output")
        self.assertRegex(lines[1], r"^vramtrace:   pid \d+ python[0-9.]*: peak [0-9.]+ MiB on device 0 "
                                   r"\([0-9.]+ MiB in blocks\); leaked 2\.0 MiB in 2 blocks at its end, "
                                   rf"most \(1\.0 MiB\) from module_leak\.py:({residual} in "
                                   rf"Residual\.forward|{norm} in collect)$")
        self.assertEqual(lines[2], f"vramtrace: more: vramtrace leaks {self.trace}, "
                                   f"vramtrace summary {self.trace}")


if __name__ == "__main__":
    torch_run.main()
