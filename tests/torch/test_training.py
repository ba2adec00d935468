"""Training loops as people write them (workloads/train_loop.py: no marker, the model and
optimizer held to the end), recorded, and held against the program's own objects: parameters
made every way, the common optimizers, and the leaks people plant without meaning to.

- Roles at the end of training equal to the byte the block bytes of `model.parameters()` and
  buffers, of each `p.grad`, of `optimizer.state` (torch.cuda.memory_snapshot()'s blocks), and
  sum to memory_allocated(); unknown is at most 2% of it.
- The iterations are found without a marker: a healthy loop grows nothing (`gate --max-growth
  1MiB` exits 0) and `run`'s last line says nothing leaked and what is held by role; a planted
  leak fails that gate, comes first in `run`'s line at its Python line, and is never called an
  activation or a temporary.
- DistributedDataParallel over two ranks (torchrun, gloo) with a leak on rank 1 alone: each
  rank's roles are its own objects' bytes (DDP's buckets, which its gradients are views of,
  are gradients), rank 1's line leads with the leak at its line, rank 0's says nothing leaked,
  and each is named by its rank."""

from __future__ import annotations

import re
import subprocess
import unittest
from typing import Dict, Tuple

import torch_run
from torch_run import WORKLOADS, TempDirTest

SCRIPT = WORKLOADS / "train_loop.py"
DDP_SCRIPT = WORKLOADS / "train_ddp.py"
STEPS = 8
MiB = 1 << 20


class TrainingTest(TempDirTest):
    recorded: Dict[Tuple[str, ...], tuple] = {}

    def record(self, *args: str, **env: str):
        """The loop recorded with ARGS in ENV, once: (trace, truth, run's line for the
        process)."""
        key = args + tuple(f"{name}={value}" for name, value in sorted(env.items()))
        if key not in self.recorded:
            trace = self.path(str(len(self.recorded)) + ".db")
            result = torch_run.record(trace, torch_run.python(SCRIPT, "--steps", str(STEPS), *args),
                                      env=torch_run.child_env(**env))
            (truth,) = torch_run.json_lines(result.stdout)
            line = next(line for line in result.stderr.splitlines() if " pid " in line)
            self.recorded[key] = (trace, truth, line)
        return self.recorded[key]

    def roles(self, trace: str) -> Dict[str, int]:
        (process,) = torch_run.report("roles", trace, "--at", "trained")["processes"]
        return process["roles"]

    def growth_gate(self, trace: str) -> subprocess.CompletedProcess:
        return subprocess.run([torch_run.vramtrace_binary(), "gate", trace, "--max-growth",
                               "1MiB"], capture_output=True, text=True, timeout=120)

    def check_roles(self, *args: str, unknown_share: float = 0.02, **env: str) -> None:
        trace, truth, _ = self.record(*args, **env)
        roles = self.roles(trace)
        for role in ("parameter", "gradient", "optimizer_state"):
            self.assertEqual(roles[role], truth[role], (args, role, roles, truth))
        if truth["allocated"] is not None:  # null: no caching, and torch counts nothing
            self.assertEqual(sum(roles.values()), truth["allocated"], (args, roles))
        self.assertLessEqual(roles["unknown"], unknown_share * sum(roles.values()), (args, roles))

    def check_healthy(self, *args: str, **env: str) -> None:
        trace, _, line = self.record(*args, **env)
        gate = self.growth_gate(trace)
        self.assertEqual(gate.returncode, 0, gate.stdout + gate.stderr)
        self.assertIn(f"{STEPS} iterations found from its backward passes): 0 B per iteration",
                      gate.stdout)
        self.assertNotIn("LEAKS", line)
        self.assertIn(f"nothing leaked over {STEPS} iterations", line)
        self.assertRegex(line, r"held at its end: 2\.0 MiB parameters, 2\.0 MiB gradients, "
                               r"[24]\.0 MiB optimizer state")

    def check_leak_line(self, line: str, script: str, planted: int, leaked: int,
                        unit: str = "blocks") -> None:
        """run's line leads with the leak at `script`:`planted`, at a rate within 15% of
        `leaked` bytes over the steps (a kept block may be a larger free block the allocator
        had: up to 1 MiB more than asked)."""
        match = re.search(rf"python[0-9.]*: LEAKS ([0-9.]+) MiB per iteration at "
                          rf"{re.escape(script)}:{planted} in <module> \(([0-9.]+) MiB in "
                          rf"{STEPS} {unit} at its end, {STEPS} iterations\)", line)
        self.assertIsNotNone(match, line)
        self.assertAlmostEqual(float(match.group(1)) * MiB, leaked / STEPS,
                               delta=0.15 * leaked / STEPS)
        self.assertAlmostEqual(float(match.group(2)) * MiB, leaked, delta=0.05 * MiB)

    def test_parameters_made_every_way_are_parameters_to_the_byte(self) -> None:
        for how in ("cuda", "to", "device_arg", "device_context", "randn", "meta", "state_dict"):
            with self.subTest(params=how):
                self.check_roles("--params", how)
                self.check_healthy("--params", how)

    def test_each_optimizers_state_is_optimizer_state_to_the_byte(self) -> None:
        for optimizer in ("adamw", "sgd", "adam_foreach", "adam_fused"):
            with self.subTest(optimizer=optimizer):
                self.check_roles("--optimizer", optimizer)
                self.check_healthy("--optimizer", optimizer)

    def test_each_variant_people_train_with_keeps_the_roles_exact(self) -> None:
        for variant in ("bf16_autocast", "checkpoint", "accumulate"):
            with self.subTest(variant=variant):
                self.check_roles("--variant", variant)
                trace, _, line = self.record("--variant", variant)
                iterations = 2 * STEPS if variant == "accumulate" else STEPS  # micro-batches
                self.assertIn(f"nothing leaked over {iterations} iterations", line)
                self.assertEqual(self.growth_gate(trace).returncode, 0)
        # An evaluation after training: the model's roles stay exact and nothing leaks; what
        # the evaluation holds at the end (its batch, output and, without no_grad, the graph's
        # saved tensors) has no role yet, so its share is not held here.
        for variant in ("eval", "eval_no_grad"):
            with self.subTest(variant=variant):
                self.check_roles("--variant", variant, unknown_share=1.0)
                self.check_healthy("--variant", variant)

    def test_advice_saves_what_it_says_when_applied(self) -> None:
        """Each remedy advised at the peak of the fp32 loop, applied (the same loop under bf16
        autocast, and with half the micro-batch and two accumulated), changes
        max_memory_allocated() by its estimate, within 20%; the remedy not advised (SGD for
        Adam: its state is 5% of the peak) saves under 5%."""
        trace, base, _ = self.record()
        (process,) = torch_run.report("roles", trace)["processes"]
        advised = {advice["id"]: advice["evidence"]["saving_bytes"] for advice in process["advice"]}
        for remedy, args in (("mixed_precision", ("--variant", "bf16_autocast")),
                             ("micro_batches", ("--variant", "accumulate"))):
            with self.subTest(remedy=remedy):
                self.assertIn(remedy, advised, process["advice"])
                _, applied, _ = self.record(*args)
                saved = base["max_allocated"] - applied["max_allocated"]
                self.assertAlmostEqual(advised[remedy], saved, delta=0.2 * saved,
                                       msg=(remedy, advised[remedy], saved))
        self.assertNotIn("lighter_optimizer", advised)
        _, lighter, _ = self.record("--optimizer", "sgd")
        self.assertLess(base["max_allocated"] - lighter["max_allocated"],
                        0.05 * base["max_allocated"])

    def test_each_planted_leak_fails_the_growth_gate_at_its_line(self) -> None:
        for leak in ("list", "total_loss", "cache"):
            with self.subTest(leak=leak):
                trace, truth, line = self.record("--leak", leak)
                planted = torch_run.planted_line(SCRIPT, leak)
                gate = self.growth_gate(trace)
                self.assertEqual(gate.returncode, 1, gate.stdout + gate.stderr)
                self.assertIn("FAIL growth", gate.stdout)
                self.assertIn(f"train_loop.py:{planted}", gate.stdout)
                # The leak comes first in run's line, at the user's line, with its rate: the
                # blocks it keeps, a step's worth an iteration.
                leaked = truth["leak"] or STEPS * 2 * MiB  # total_loss: the saved differences
                self.check_leak_line(line, "train_loop.py", planted, leaked)
                # What the leak keeps is neither an activation nor a temporary, and what is
                # rightly an activation (the last step's batch, output and loss) stays one.
                roles = self.roles(trace)
                self.assertGreaterEqual(roles["unknown"], leaked, roles)
                self.assertLessEqual(roles["activation"] + roles["temporary"],
                                     truth["last_step"], roles)
                for role in ("parameter", "gradient", "optimizer_state"):
                    self.assertEqual(roles[role], truth[role], (leak, role, roles, truth))

    def test_the_answers_are_the_same_under_every_allocator_configuration(self) -> None:
        """Expandable segments (blocks in mapped pages), cudaMallocAsync and no caching (each
        tensor the driver's allocation: no blocks, and the roles are those allocations)."""
        configurations = {
            "expandable segments": ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
                                    "blocks"),
            "cudaMallocAsync": ({"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
                                "allocations"),
            "no caching": ({"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, "allocations"),
        }
        for name, (env, unit) in configurations.items():
            with self.subTest(configuration=name):
                self.check_roles(**env)
                self.check_healthy(**env)
                trace, truth, line = self.record("--leak", "list", **env)
                self.check_leak_line(line, "train_loop.py", torch_run.planted_line(SCRIPT, "list"),
                                     truth["leak"], unit)
                self.assertEqual(self.growth_gate(trace).returncode, 1)
                roles = self.roles(trace)
                self.assertEqual(roles["unknown"] - truth["leak"],
                                 self.roles(self.record(**env)[0])["unknown"], roles)

    def test_growth_without_a_marker_names_the_leak_and_its_rate(self) -> None:
        trace, _, _ = self.record("--leak", "list")
        growth = torch_run.report("leaks", trace, "--growth")
        self.assertIsNone(growth["marker"])
        (process,) = growth["processes"]
        self.assertEqual((process["iterations"], process["found_by"], process["marker"]),
                         (STEPS, "backward_passes", None))
        (entry,) = growth["growing"]
        self.assertEqual(entry["bytes_per_iteration"], 2 * MiB)
        frames = torch_run.python_frames(entry["stack"])
        self.assertEqual(frames[0]["line"], torch_run.planted_line(SCRIPT, "list"))
        # A marker named and absent is still an error, not a guess.
        absent = subprocess.run([torch_run.vramtrace_binary(), "leaks", trace, "--growth",
                                 "epoch"], capture_output=True, text=True, timeout=60)
        self.assertEqual(absent.returncode, 2, absent.stderr)
        self.assertTrue(re.search(r"no selected process has the marker 'epoch' twice",
                                  absent.stderr), absent.stderr)

    def test_ddp_leak_on_one_rank_is_that_ranks_alone(self) -> None:
        trace = self.path("ddp.db")
        result = torch_run.record(trace, [torch_run.torch_python(), "-m",
                                          "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                                          str(DDP_SCRIPT), "--steps", str(STEPS),
                                          "--leak-rank", "1"])
        truths = {truth["rank"]: truth for truth in torch_run.json_lines(result.stdout)}
        self.assertEqual(sorted(truths), [0, 1], result.stdout)
        roles = {process["pid"]: process["roles"] for process in
                 torch_run.report("roles", trace, "--at", "trained")["processes"]}
        planted = torch_run.planted_line(DDP_SCRIPT, "rank")
        lines = [line for line in result.stderr.splitlines() if " (pid " in line]
        for rank, truth in truths.items():
            with self.subTest(rank=rank):
                got = roles[truth["pid"]]
                for role in ("parameter", "gradient", "optimizer_state"):
                    self.assertEqual(got[role], truth[role], (rank, role, got, truth))
                self.assertEqual(sum(got.values()), truth["allocated"], got)
                (line,) = [line for line in lines if f"rank {rank} (pid {truth['pid']})" in line]
                if rank == 1:
                    self.check_leak_line(line, "train_ddp.py", planted, truth["leak"])
                    self.assertEqual(got["unknown"], truth["leak"], got)
                else:
                    self.assertIn(f"nothing leaked over {STEPS} iterations", line)
                    self.assertEqual(got["unknown"], 0, got)
        # `leaks` keeps the ranks apart: the planted line's group is rank 1's, with its bytes.
        leaks = torch_run.report("leaks", trace)
        self.assertTrue(all(group["rank"] in (0, 1) for group in leaks["leaks"]), leaks["leaks"])
        planted_groups = [group for group in leaks["leaks"]
                          if {"file": str(DDP_SCRIPT), "line": planted} in
                          [{"file": f.get("file"), "line": f.get("line")} for f in group["stack"]]]
        self.assertEqual([(g["rank"], g["pid"], g["bytes"]) for g in planted_groups],
                         [(1, truths[1]["pid"], truths[1]["leak"])], planted_groups)
        merged = torch_run.report("leaks", trace, "--merge-ranks")
        self.assertEqual(merged["total_bytes"], leaks["total_bytes"])
        self.assertLess(len(merged["leaks"]), len(leaks["leaks"]))
        self.assertFalse(any("rank" in group for group in merged["leaks"]))
        # Rank 1 against rank 0 of the same trace: the planted leak is rank 1's difference.
        diff = torch_run.report("diff", trace, "--rank", "0", "--b-rank", "1")
        first = diff["changes"][0]
        self.assertEqual((first["leaked"]["a"], first["leaked"]["b"]), (0, truths[1]["leak"]),
                         first)
        self.assertIn({"file": str(DDP_SCRIPT), "line": planted},
                      [{"file": frame.get("file"), "line": frame.get("line")}
                       for frame in first["stack"]], first["stack"])
        text = subprocess.run([torch_run.vramtrace_binary(), "diff", trace, "--rank", "0",
                               "--b-rank", "1"], capture_output=True, text=True, timeout=120)
        self.assertIn(f"vramtrace diff: {trace} (--rank 0) -> {trace} (--rank 1)", text.stdout)
        gate = subprocess.run([torch_run.vramtrace_binary(), "gate", trace, "--max-growth",
                               "1MiB"], capture_output=True, text=True, timeout=120)
        self.assertEqual(gate.returncode, 1, gate.stdout + gate.stderr)
        self.assertIn(f"FAIL growth (rank 1 (pid {truths[1]['pid']}), {STEPS} iterations found "
                      f"from its backward passes)", gate.stdout)
        self.assertIn(f"PASS growth (rank 0 (pid {truths[0]['pid']})", gate.stdout)


if __name__ == "__main__":
    torch_run.main()
