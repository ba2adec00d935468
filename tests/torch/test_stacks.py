"""A leaked tensor's stack shows the user's Python function and line, and torch's own Python
frames where the allocation went through them: nn.Module.__call__ (torch/nn/modules/module.py)
for a user module's forward, and torch/nn/modules/normalization.py and torch/nn/functional.py
for nn.LayerNorm's."""

from __future__ import annotations

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
        torch_run.record(cls.trace, torch_run.python(SCRIPT))
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


if __name__ == "__main__":
    torch_run.main()
