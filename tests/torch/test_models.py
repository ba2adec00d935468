"""Models people train, recorded: transformers' GPT-2 and a Llama-style decoder (from small
configs) and a ResNet-18 (workloads/train_models.py) train for a few steps with AdamW under
`vramtrace run`; at every step the trace's live blocks must equal memory_allocated() and the
allocator's live segments memory_reserved() (samples/torch/compare_with_torch.py), and the most
block bytes live at once up to the step max_memory_allocated(); once trained, the roles are the
model's own parameters, gradients and AdamW state. The workspace each cuBLAS handle
allocates for itself is held to the end and is no leak: `run` and `leaks` name it apart, and a
leak gate passes."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import unittest

import torch_run
from torch_run import SAMPLES, WORKLOADS, TempDirTest, Trace

STEPS = 3


@functools.lru_cache(maxsize=None)
def has_transformers() -> bool:
    """Whether the torch interpreter has transformers (pinned in requirements.txt; a GPU
    machine's own Python may lack it)."""
    return subprocess.run([torch_run.torch_python(), "-c", "import transformers"],
                          capture_output=True, timeout=120).returncode == 0


class ModelsTest(TempDirTest):
    recorded: dict = {}

    def setUp(self) -> None:
        wants_transformers = self._testMethodName.split("_")[1] in ("gpt2", "llama", "cublas")
        if wants_transformers and not has_transformers():
            if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
                self.fail("CI is set and transformers is missing: run scripts/install-torch.sh")
            self.skipTest("transformers is not installed beside torch")

    def record(self, model: str):
        """The model's training recorded: (trace, output file, JSON lines), once."""
        if model not in self.recorded:
            trace = self.path(model + ".db")
            result = torch_run.record(trace, torch_run.python(WORKLOADS / "train_models.py",
                                                              model, "--steps", str(STEPS)))
            output = self.path(model + ".jsonl")
            lines = torch_run.json_lines(result.stdout)
            steps = [line for line in lines if line["marker"] != "trained"]
            with open(output, "w") as out:
                out.writelines(json.dumps(line) + "\n" for line in steps)
            self.assertEqual([line["marker"] for line in lines],
                             [f"step {step}" for step in range(STEPS)] + ["trained"],
                             result.stdout)
            self.recorded[model] = (trace, output, steps, result.stderr, lines[-1])
        return self.recorded[model]

    def check(self, model: str) -> None:
        trace_path, output, lines, _, _ = self.record(model)
        result = subprocess.run([torch_run.torch_python(), str(SAMPLES / "compare_with_torch.py"),
                                 trace_path, output], capture_output=True, text=True, timeout=60)
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        self.assertEqual(result.stdout.splitlines(), [
            f"PASS live blocks = memory_allocated() at all {STEPS} markers",
            f"PASS live segments = memory_reserved() at all {STEPS} markers",
            f"PASS allocator's reported totals = both at all {STEPS} markers",
        ])
        trace = Trace(trace_path)
        self.addCleanup(trace.close)
        peaks = {line["marker"]: trace.peak_before(trace.marker_seq(line["marker"]), ["block"])
                 for line in lines}
        self.assertEqual(peaks, {line["marker"]: line["max_allocated"] for line in lines})

    def check_roles(self, model: str) -> None:
        """Once trained, the roles are the model's own: its parameters and buffers, its
        gradients (none: zero_grad(set_to_none=True)) and AdamW's state, to the byte, and
        run's line says nothing leaked over the steps, found without a marker."""
        trace_path, _, _, stderr, truth = self.record(model)
        (process,) = torch_run.report("roles", trace_path, "--at", "trained")["processes"]
        roles = process["roles"]
        for role in ("parameter", "gradient", "optimizer_state"):
            self.assertEqual(roles[role], truth[role], (model, role, roles, truth))
        self.assertEqual(sum(roles.values()), truth["allocated"], roles)
        self.assertLessEqual(roles["unknown"], 0.02 * truth["allocated"], roles)
        line = next(line for line in stderr.splitlines() if "python" in line and " pid " in line)
        self.assertIn(f"nothing leaked over {STEPS} iterations", line)

    def test_gpt2_roles_are_its_own_parameters_and_adamw_state(self) -> None:
        self.check_roles("gpt2")

    def test_llama_roles_are_its_own_parameters_and_adamw_state(self) -> None:
        self.check_roles("llama")

    def test_resnet18_roles_are_its_own_parameters_and_adamw_state(self) -> None:
        self.check_roles("resnet18")

    def test_gpt2_trains_and_the_trace_is_torchs_at_every_step(self) -> None:
        self.check("gpt2")

    def test_llama_trains_and_the_trace_is_torchs_at_every_step(self) -> None:
        self.check("llama")

    def test_resnet18_trains_and_the_trace_is_torchs_at_every_step(self) -> None:
        self.check("resnet18")

    def test_cublas_workspaces_are_held_by_cublas_not_leaked(self) -> None:
        trace_path, _, _, stderr, _ = self.record("gpt2")
        line = next(line for line in stderr.splitlines() if "python" in line and " pid " in line)
        self.assertIn("nothing leaked", line)
        self.assertRegex(line, r"[0-9.]+ MiB held by libcublas\.so\.\d+ for itself \(not a leak\)")
        leaks = torch_run.report("leaks", trace_path)
        self.assertEqual((leaks["total_bytes"], leaks["leaks"]), (0, []))
        held = {entry["library"]: entry["bytes"] for entry in leaks["held_by_libraries"]}
        self.assertTrue(any(name.startswith("libcublas.so") for name in held), held)
        # The bytes set apart are device memory the trace holds live at the end in which no
        # block of torch's was ever made.
        trace = Trace(trace_path)
        self.addCleanup(trace.close)
        outside_torch = trace.count(
            "SELECT ifnull(sum(size), 0) FROM allocation WHERE kind = ? AND result = 0 "
            "AND free_seq IS NULL AND id NOT IN "
            "(SELECT segment_id FROM allocation WHERE segment_id IS NOT NULL)",
            trace.kinds["device"])
        self.assertEqual(sum(held.values()), outside_torch)
        gate = subprocess.run([torch_run.vramtrace_binary(), "gate", trace_path,
                               "--max-leaked-bytes", "0"], capture_output=True, text=True,
                              timeout=60)
        self.assertEqual(gate.returncode, 0, gate.stdout + gate.stderr)


if __name__ == "__main__":
    torch_run.main()
