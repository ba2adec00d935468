"""NVIDIA's math libraries on the simulated GPU: workloads/math_libraries.py runs every
operation that goes through cuBLAS, cuBLASLt or cuDNN that PyTorch users lean on (Linear,
matmul, bmm, addmm, baddbmm, Conv2d, BatchNorm2d, LayerNorm, cross-entropy, each
scaled_dot_product_attention backend, autocast in bf16 and fp16, GradScaler with AdamW,
activation checkpointing, a CUDA graph's capture and replays, make_graphed_callables), forward
and backward, under `vramtrace run`, in each allocator configuration. None may fail, and at the mark after each the trace must agree with torch:
- default and expandable segments: live blocks = memory_allocated(), the allocator's live
  segments = memory_reserved() (samples/torch/compare_with_torch.py);
- cudaMallocAsync: live `async` allocations = memory_allocated().
The libraries take device memory of their own outside torch's allocator; it is recorded, and
is not counted as torch's."""

from __future__ import annotations

import subprocess
import unittest

import torch_run
from torch_run import SAMPLES, WORKLOADS, TempDirTest, Trace

OPERATIONS = ["linear", "matmul", "bmm", "addmm", "baddbmm", "conv2d", "batchnorm2d",
              "layernorm", "cross_entropy", "sdpa math", "sdpa flash_attention",
              "sdpa efficient_attention", "sdpa cudnn_attention", "autocast bfloat16",
              "autocast float16", "grad_scaler step", "checkpoint", "cuda_graph capture",
              "cuda_graph replay 0", "cuda_graph replay 1", "make_graphed_callables"]

CONFIGURATIONS = {"default": None, "expandable": "expandable_segments:True",
                  "async": "backend:cudaMallocAsync"}


class MathLibrariesTest(TempDirTest):
    recorded: dict = {}

    def record(self, name: str):
        """The workload recorded in configuration NAME: (trace, output file, JSON lines)."""
        if name not in self.recorded:
            trace = self.path(name + ".db")
            conf = CONFIGURATIONS[name]
            env = torch_run.child_env(**({"PYTORCH_CUDA_ALLOC_CONF": conf} if conf else {}))
            result = torch_run.record(trace, torch_run.python(WORKLOADS / "math_libraries.py"),
                                      env=env)
            output = self.path(name + ".jsonl")
            with open(output, "w") as out:
                out.write(result.stdout)
            self.recorded[name] = (trace, output, torch_run.json_lines(result.stdout))
        return self.recorded[name]

    def check_runs_every_operation(self, name: str) -> None:
        _, _, lines = self.record(name)
        self.assertEqual(lines[-1], {"failed": []})
        self.assertEqual([line["marker"] for line in lines[:-1]], OPERATIONS)

    def check_against_torch(self, name: str) -> None:
        trace, output, _ = self.record(name)
        result = subprocess.run([torch_run.torch_python(), str(SAMPLES / "compare_with_torch.py"),
                                 trace, output], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        count = len(OPERATIONS)
        self.assertEqual(result.stdout.splitlines(), [
            f"PASS live blocks = memory_allocated() at all {count} markers",
            f"PASS live segments = memory_reserved() at all {count} markers",
            f"PASS allocator's reported totals = both at all {count} markers",
        ])

    def test_every_operation_runs_with_the_default_allocator(self) -> None:
        self.check_runs_every_operation("default")

    def test_blocks_and_segments_are_torchs_with_the_default_allocator(self) -> None:
        self.check_against_torch("default")

    def test_every_operation_runs_with_expandable_segments(self) -> None:
        self.check_runs_every_operation("expandable")

    def test_blocks_and_segments_are_torchs_with_expandable_segments(self) -> None:
        self.check_against_torch("expandable")

    def test_every_operation_runs_with_cuda_malloc_async(self) -> None:
        self.check_runs_every_operation("async")

    def test_async_allocations_are_torchs_with_cuda_malloc_async(self) -> None:
        trace_path, _, lines = self.record("async")
        trace = Trace(trace_path)
        self.addCleanup(trace.close)
        got = {line["marker"]: trace.live_bytes(trace.marker_seq(line["marker"]), ["async"])
               for line in lines[:-1]}
        self.assertEqual(got, {line["marker"]: line["allocated"] for line in lines[:-1]})

    def test_the_libraries_own_memory_is_recorded_apart_from_torchs(self) -> None:
        # cuBLAS and cuBLASLt allocate device memory themselves (through the runtime linked
        # into them, so at the driver): recorded as device allocations in which no block was
        # made, which the comparison above leaves out.
        trace_path, _, _ = self.record("default")
        trace = Trace(trace_path)
        self.addCleanup(trace.close)
        own = trace.count(
            "SELECT count(*) FROM allocation WHERE kind = ? AND result = 0 AND id NOT IN "
            "(SELECT segment_id FROM allocation WHERE segment_id IS NOT NULL)",
            trace.kinds["device"])
        self.assertGreater(own, 0)


if __name__ == "__main__":
    torch_run.main()
