"""The smallest PyTorch program on the simulated GPU: one 3-float tensor, whose block torch
counts as 512 bytes (its smallest block). Unrecorded it prints 512; recorded, the trace's live
block bytes at the mark after it must equal torch's count, and the block must be tied to the
segment the allocator made for it."""

from __future__ import annotations

import unittest

import torch_run
from torch_run import TempDirTest, Trace

# The one-liner of the README, plus a mark once the tensor exists (a no-op unrecorded).
PROGRAM = ("import torch, vramtrace; x = torch.ones(3, device='cuda'); "
           "n = torch.cuda.memory_allocated(); vramtrace.mark('counted'); print(n)")


class SmokeTest(TempDirTest):
    def test_torch_counts_512_on_the_simulated_gpu(self) -> None:
        result = torch_run.run([torch_run.torch_python(), "-c",
                                "import torch; x = torch.ones(3, device='cuda'); "
                                "print(torch.cuda.memory_allocated())"])
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout.strip(), "512")

    def test_trace_holds_the_block_torch_counts(self) -> None:
        trace_path = self.path("smoke.db")
        result = torch_run.record(trace_path, [torch_run.torch_python(), "-c", PROGRAM])
        torch_count = int(result.stdout.strip())
        self.assertEqual(torch_count, 512)
        trace = Trace(trace_path)
        self.addCleanup(trace.close)
        seq = trace.marker_seq("counted")
        self.assertEqual(trace.live_bytes(seq, ["block"]), torch_count)
        # One block, inside a recorded segment (the 2 MiB small-block segment).
        rows = trace.db.execute(
            "SELECT b.size, s.size, s.kind FROM allocation AS b JOIN allocation AS s "
            "ON s.id = b.segment_id WHERE b.kind = ? AND b.result = 0 AND b.alloc_seq < ?",
            (trace.kinds["block"], seq)).fetchall()
        self.assertEqual(rows, [(512, 2 << 20, trace.kinds["device"])])
        # Live at the end of the trace is `free_seq IS NULL` (docs/schema.md): the tensor is
        # a global of `-c`, and what the trace says of it at exit is what torch did with it.
        self.assertIn(trace.live_at_end(["block"]), (0, torch_count))


if __name__ == "__main__":
    torch_run.main()
