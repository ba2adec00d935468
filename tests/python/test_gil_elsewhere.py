"""A thread that allocates without the GIL while another thread holds it keeps its own
Python frames (gil_elsewhere.py): the shim reads them directly, and never walks the GIL
holder's frames as if they were its own, which on Python 3.9 to 3.11 would be a walk of
another thread's frames through the C API without the GIL (and, on real PyTorch, a crash)."""

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).with_name("gil_elsewhere.py").resolve()


class GilElsewhereTest(unittest.TestCase):
    def test_each_allocation_has_its_own_threads_python_frames(self) -> None:
        vramtrace = os.environ["VRAMTRACE_BINARY"]
        with tempfile.TemporaryDirectory() as tmp:
            trace = os.path.join(tmp, "gil.db")
            env = dict(os.environ, SIMCUDA_DEVICE_MEMORY="1GiB", SIMCUDA_DEVICE_COUNT="1")
            run = subprocess.run([vramtrace, "run", "-o", trace, "--", sys.executable,
                                  str(SCRIPT)], capture_output=True, text=True, timeout=120,
                                 env=env)
            self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
            planted = json.loads(run.stdout.strip().splitlines()[-1])
            db = sqlite3.connect(trace)
            try:
                blocks = [leaf for (leaf,) in db.execute(
                    "SELECT a.alloc_callsite_id FROM allocation a JOIN allocation_kind k "
                    "ON k.id = a.kind WHERE k.name = 'block' AND a.result = 0")]
                functions = []
                for leaf in blocks:
                    functions.append({name for (name,) in db.execute(
                        "WITH RECURSIVE chain(id, parent_id, frame_id) AS ("
                        "  SELECT id, parent_id, frame_id FROM callsite WHERE id = ?"
                        "  UNION ALL SELECT c.id, c.parent_id, c.frame_id"
                        "  FROM callsite c JOIN chain ON c.id = chain.parent_id)"
                        "SELECT f.function FROM chain JOIN frame f ON f.id = chain.frame_id "
                        "WHERE f.language = 'python'", (leaf,))})
            finally:
                db.close()
        self.assertEqual(len(blocks), planted["allocations"])
        for names in functions:
            self.assertIn("allocate_without_the_gil", names)
            self.assertNotIn("spin_holding_the_gil", names)


if __name__ == "__main__":
    unittest.main()
