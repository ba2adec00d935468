"""The viewer opens a trace of real PyTorch (samples/torch/train_leak.py) headless: the first
picture of its timeline is painted and saved (vramtrace-gui --time-first-picture
--screenshot), and it exits 0; it opens on the tensors (the block level) of the training loop,
after the program's start-up and before its first step ended."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import unittest

import torch_run
from torch_run import SAMPLES, TempDirTest


@unittest.skipUnless(os.environ.get("VRAMTRACE_GUI"), "the viewer is not built (no Qt 6)")
class ViewerTest(TempDirTest):
    def test_first_picture_of_a_torch_trace(self) -> None:
        trace = self.path("train.db")
        torch_run.record(trace, torch_run.python(SAMPLES / "train_leak.py", "--steps", "5"))
        picture = self.path("train.png")
        result = subprocess.run([os.environ["VRAMTRACE_GUI"], "--time-first-picture", trace,
                                 "--screenshot", picture], capture_output=True, text=True,
                                timeout=90, env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("first picture after", result.stderr)
        with open(picture, "rb") as image:
            self.assertEqual(image.read(8), b"\x89PNG\r\n\x1a\n")
        self.assertGreater(os.path.getsize(picture), 10_000)
        opened = re.search(r"opened at the (\w+) level, showing (\d+) to (\d+) ns", result.stderr)
        self.assertIsNotNone(opened, result.stderr)
        self.assertEqual(opened.group(1), "block")
        # The program's own moments: its parameters made, and the end of its first step.
        with sqlite3.connect(trace) as db:
            first_block = db.execute(
                "SELECT min(a.alloc_ns) FROM allocation AS a JOIN allocation_kind AS k ON "
                "k.id = a.kind WHERE k.name = 'block'").fetchone()[0]
            first_step = db.execute("SELECT start_ns FROM marker WHERE name = 'step 0'"
                                    ).fetchone()[0]
            last_event = db.execute("SELECT max(max(alloc_ns), max(coalesce(free_ns, 0))) "
                                    "FROM allocation").fetchone()[0]
        start, end = int(opened.group(2)), int(opened.group(3))
        self.assertLess(first_block, start, "the start-up is not left out")
        self.assertLess(start, first_step, "the first step is not in view")
        self.assertGreaterEqual(end, last_event)


if __name__ == "__main__":
    torch_run.main()
