"""A backward pass and an Adam step (parameters, their gradients, two state tensors per
parameter): every block torch's allocator handed out is in the trace (the count of
memory_stats()["allocation.all.allocated"], and of its frees), and the blocks made during
backward, on the autograd engine's own device thread, are recorded under that thread."""

from __future__ import annotations

import unittest

import torch_run
from torch_run import WORKLOADS, TempDirTest, Trace


class AutogradTest(TempDirTest):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.trace_path = cls.path("adam.db")
        result = torch_run.record(cls.trace_path, torch_run.python(WORKLOADS / "adam_backward.py"))
        (cls.torch,) = torch_run.json_lines(result.stdout)

    def setUp(self) -> None:
        self.trace = Trace(self.trace_path)
        self.addCleanup(self.trace.close)
        self.seq = {name: self.trace.marker_seq(name)
                    for name in ("before backward", "after backward", "after step")}

    def blocks(self, where: str, *args) -> int:
        return self.trace.count(f"SELECT count(*) FROM allocation WHERE kind = ? AND result = 0 "
                                f"AND {where}", self.trace.kinds["block"], *args)

    def test_every_allocation_is_recorded(self) -> None:
        end = self.seq["after step"]
        self.assertEqual(self.blocks("alloc_seq < ?", end), self.torch["allocations"])
        self.assertEqual(self.blocks("free_seq < ?", end), self.torch["frees"])
        self.assertEqual(self.trace.live_bytes(end, ["block"]), self.torch["allocated"])

    def test_adam_state_is_two_tensors_per_parameter(self) -> None:
        self.assertEqual(self.torch["state_tensors"], 2 * self.torch["parameters"])
        grown = (self.trace.live_bytes(self.seq["after step"], ["block"])
                 - self.trace.live_bytes(self.seq["after backward"], ["block"]))
        self.assertEqual(grown, 2 * self.torch["parameter_bytes"])

    def test_backward_allocates_on_the_autograd_thread(self) -> None:
        (main_utid,) = self.trace.db.execute(
            "SELECT utid FROM marker WHERE name = 'before backward'").fetchone()
        during = self.trace.db.execute(
            "SELECT alloc_utid, count(*) FROM allocation WHERE kind = ? AND result = 0 "
            "AND alloc_seq > ? AND alloc_seq < ? GROUP BY alloc_utid",
            (self.trace.kinds["block"], self.seq["before backward"],
             self.seq["after backward"])).fetchall()
        threads = dict(during)
        others = [utid for utid in threads if utid != main_utid]
        self.assertEqual(len(others), 1, f"blocks by thread during backward: {threads}")
        tids = dict(self.trace.db.execute("SELECT utid, tid FROM thread").fetchall())
        self.assertNotEqual(tids[others[0]], tids[main_utid])
        # The gradients at least: one block per parameter on that thread.
        self.assertGreaterEqual(threads[others[0]], self.torch["parameters"])

    def test_the_autograd_thread_has_its_name(self) -> None:
        # torch names its device threads pt_autograd_N before they allocate anything.
        names = [name for (name,) in self.trace.db.execute("SELECT name FROM thread")]
        self.assertIn("pt_autograd_0", names)


if __name__ == "__main__":
    torch_run.main()
