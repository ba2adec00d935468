"""The viewer opens a trace of real PyTorch (samples/torch/train_leak.py) headless: the first
picture of its timeline is painted and saved (vramtrace-gui --time-first-picture
--screenshot), and it exits 0."""

from __future__ import annotations

import os
import subprocess
import unittest

import torch_run
from torch_run import SAMPLES, TempDirTest


@unittest.skipUnless(os.environ.get("VRAMTRACE_GUI"), "the viewer is not built (no Qt 6)")
class ViewerTest(TempDirTest):
    def test_first_picture_of_a_torch_trace(self) -> None:
        trace = self.path("train.db")
        torch_run.record(trace, torch_run.python(SAMPLES / "train_leak.py", "--steps", "3"))
        picture = self.path("train.png")
        result = subprocess.run([os.environ["VRAMTRACE_GUI"], "--time-first-picture", trace,
                                 "--screenshot", picture], capture_output=True, text=True,
                                timeout=90, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("first picture after", result.stderr)
        with open(picture, "rb") as image:
            self.assertEqual(image.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(picture), 10_000)


if __name__ == "__main__":
    torch_run.main()
