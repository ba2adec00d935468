"""The allocator's other configurations, each against torch's own counters:
- expandable_segments:True: the segments are VMM mappings (cuMemMap), whose live bytes equal
  memory_reserved() at every step, and the blocks memory_allocated();
- backend:cudaMallocAsync: torch hands every tensor to the driver's stream-ordered pool
  (cudaMallocAsync, unrounded) and reports no blocks, so the trace's live `async`
  allocations are the tensors: they equal memory_allocated(), which that backend reads from
  the pool (cudaMemPoolAttrUsedMemCurrent, the bytes asked for), and their peak
  max_memory_allocated(); memory_reserved() is what the pool holds, whole granules that it
  keeps (samples/torch/pool_probe.py checks how it counts, here and on a real GPU);
- PYTORCH_NO_CUDA_MEMORY_CACHING=1: no caching, no block reports; the planted leak is a
  cudaMalloc that `vramtrace leaks --at done` finds at the segment level, at its line."""

from __future__ import annotations

import subprocess
import unittest

import torch_run
from torch_run import SAMPLES, WORKLOADS, TempDirTest, Trace

STEPS = 4


class BackendsTest(TempDirTest):
    recorded: dict = {}

    def record_training(self, name: str, **env: str):
        """train_leak.py recorded with ENV: (trace, its output file, its JSON lines), once."""
        if name not in self.recorded:
            self.recorded[name] = self._record_training(name, **env)
        return self.recorded[name]

    def _record_training(self, name: str, **env: str):
        trace = self.path(name + ".db")
        result = torch_run.record(trace, torch_run.python(SAMPLES / "train_leak.py", "--steps",
                                                          str(STEPS)),
                                  env=torch_run.child_env(**env))
        output = self.path(name + ".jsonl")
        with open(output, "w") as out:
            out.write(result.stdout)
        lines = torch_run.json_lines(result.stdout)
        self.assertEqual(len(lines), STEPS, result.stdout)
        return trace, output, lines

    def test_expandable_segments_are_mappings_equal_to_reserved(self) -> None:
        trace_path, output, lines = self.record_training(
            "expandable", PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
        trace = Trace(trace_path)
        self.addCleanup(trace.close)
        got, want = {}, {}
        for line in lines:
            seq = trace.marker_seq(line["marker"])
            got[line["marker"]] = (trace.live_bytes(seq, ["vmm_mapping"]),
                                   trace.live_bytes(seq, ["device"]),
                                   trace.live_bytes(seq, ["block"]))
            want[line["marker"]] = (line["reserved"], 0, line["allocated"])
        self.assertEqual(got, want)
        result = subprocess.run([torch_run.torch_python(), str(SAMPLES / "compare_with_torch.py"),
                                 trace_path, output], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)

    def test_cuda_malloc_async_live_allocations_are_allocated(self) -> None:
        trace_path, _, lines = self.record_training(
            "async", PYTORCH_CUDA_ALLOC_CONF="backend:cudaMallocAsync")
        trace = Trace(trace_path)
        self.addCleanup(trace.close)
        got, want = {}, {}
        for line in lines:
            seq = trace.marker_seq(line["marker"])
            got[line["marker"]] = (trace.live_bytes(seq, ["async"]),
                                   trace.live_bytes(seq, ["device"]),
                                   trace.live_bytes(seq, ["block"]))
            want[line["marker"]] = (line["allocated"], 0, 0)
        self.assertEqual(got, want)
        self.assertGreater(trace.count("SELECT count(*) FROM allocation WHERE kind = ?",
                                       trace.kinds["async"]), 0)
        # torch sets the pool's release threshold to the largest value: what the pool took at
        # the peak stays, so memory_reserved() never falls and holds at least the peak (on an
        # H200 it was 96 to 160 MiB here, over 64 to 88 MiB allocated).
        reserved = [line["reserved"] for line in lines]
        self.assertEqual(reserved, sorted(reserved))
        for line in lines:
            self.assertGreaterEqual(line["reserved"], line["max_allocated"], line)

    def test_cuda_malloc_async_peak_is_the_pools(self) -> None:
        # max_memory_allocated() is the pool's cudaMemPoolAttrUsedMemHigh, reached while the
        # small loss tensors were live too. The pool counts the bytes asked for, unrounded (as
        # measured on a real GPU), and so does the trace.
        trace_path, _, lines = self.record_training(
            "async", PYTORCH_CUDA_ALLOC_CONF="backend:cudaMallocAsync")
        trace = Trace(trace_path)
        self.addCleanup(trace.close)
        got = {line["marker"]: trace.peak_before(trace.marker_seq(line["marker"]), ["async"])
               for line in lines}
        self.assertEqual(got, {line["marker"]: line["max_allocated"] for line in lines})

    def test_the_pool_counts_as_the_real_one_does(self) -> None:
        # The probe's claims, measured on an H200, hold on the simulated pool too; check.sh
        # runs the same probe on the machine's GPU.
        result = torch_run.run(torch_run.python(SAMPLES / "pool_probe.py"),
                               env=torch_run.child_env(
                                   PYTORCH_CUDA_ALLOC_CONF="backend:cudaMallocAsync"))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout.count("\nPASS "), 4, result.stdout)

    def test_without_caching_the_leak_is_found_at_segment_level(self) -> None:
        script = WORKLOADS / "leak_loop.py"
        trace = self.path("uncached.db")
        result = torch_run.record(trace, torch_run.python(script),
                                  env=torch_run.child_env(PYTORCH_NO_CUDA_MEMORY_CACHING="1"))
        planted = torch_run.json_lines(result.stdout)[-1]
        leaks = torch_run.report("leaks", trace, "--at", "done")
        self.assertEqual(leaks["level"], "segment")
        self.assertFalse(leaks["allocator_events"])
        line = torch_run.planted_line(script, "kept per iteration")
        found = [entry for entry in leaks["leaks"]
                 if [(f["file"].endswith("leak_loop.py"), f["line"])
                     for f in torch_run.python_frames(entry["stack"])][:1] == [(True, line)]]
        self.assertEqual(len(found), 1, leaks["leaks"])
        (entry,) = found
        self.assertEqual((entry["kind"], entry["level"]), ("device", "segment"))
        self.assertEqual((entry["count"], entry["bytes"]),
                         (planted["iterations"], planted["iterations"] * planted["planted_bytes"]))

    def test_expandable_segments_reservations_and_handles_are_no_leak(self) -> None:
        # A program that frees what it made leaks nothing with expandable segments either: the
        # allocator's reserved address range (gigabytes) and its physical handles are its own.
        script = ("import json, torch\n"
                  "x = torch.rand(2, device='cuda')\n"
                  "del x\n"
                  "print(json.dumps({'allocated': torch.cuda.memory_allocated(),"
                  " 'reserved': torch.cuda.memory_reserved()}))\n")
        trace = self.path("expandable_tiny.db")
        result = torch_run.record(trace, [torch_run.torch_python(), "-c", script],
                                  env=torch_run.child_env(
                                      PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"))
        counters = torch_run.json_lines(result.stdout)[-1]
        self.assertEqual(counters["allocated"], 0)
        leaks = torch_run.report("leaks", trace)
        self.assertEqual((leaks["total_bytes"], leaks["leaks"]), (0, []))
        self.assertEqual(leaks["cached"]["bytes"], counters["reserved"])
        self.assertGreaterEqual(leaks["expandable_segments"]["reservations"], 1)
        self.assertGreaterEqual(leaks["expandable_segments"]["handles"], 1)
        line = next(line for line in result.stderr.splitlines() if " pid " in line)
        self.assertIn("nothing leaked", line)
        gate = subprocess.run([torch_run.vramtrace_binary(), "gate", trace,
                               "--max-leaked-bytes", "0"], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(gate.returncode, 0, gate.stdout + gate.stderr)


if __name__ == "__main__":
    torch_run.main()
