"""Roles on real PyTorch: `vramtrace roles` gives a training step's live blocks by role, each
to the byte of what torch says, and each equal to PyTorch's own MemTracker run in the same
process (workloads/roles_step.py: parameters and a buffer, a forward and backward pass, an Adam
step, marked before backward, after backward and after step)."""

from __future__ import annotations

import json
import subprocess
import unittest
from typing import Dict, Tuple

import torch_run
from torch_run import WORKLOADS, TempDirTest

SCRIPT = WORKLOADS / "roles_step.py"
MARKS = ("before backward", "after backward", "after step")
ROLES = ("parameter", "gradient", "optimizer_state", "activation", "temporary", "unknown")


class RolesTest(TempDirTest):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.plain = cls.path("plain.db")
        (cls.torch,) = torch_run.json_lines(
            torch_run.record(cls.plain, torch_run.python(SCRIPT)).stdout)
        cls.tracked = cls.path("memtracker.db")
        (cls.tracker,) = torch_run.json_lines(
            torch_run.record(cls.tracked, torch_run.python(SCRIPT, "--memtracker")).stdout)

    def roles(self, trace: str, moment: str) -> Dict[str, int]:
        report = torch_run.report("roles", trace, "--at", moment)
        self.assertEqual(list(report["roles"]), list(ROLES))
        self.assertEqual(len(report["processes"]), 1, report)
        return report["roles"]

    def test_each_role_is_what_torch_says_to_the_byte(self) -> None:
        weights = self.torch["parameter_bytes"] + self.torch["buffer_bytes"]
        allocated = self.torch["allocated"]
        before = self.roles(self.plain, "before backward")
        # Before backward: the weights, and what the forward pass made and keeps for backward.
        self.assertEqual(before["parameter"], weights)
        self.assertEqual(before["activation"], allocated["before backward"] - weights)
        after_backward = self.roles(self.plain, "after backward")
        self.assertEqual(after_backward["parameter"], weights)
        self.assertEqual(after_backward["gradient"], self.torch["parameter_bytes"])
        after_step = self.roles(self.plain, "after step")
        # Adam: exp_avg and exp_avg_sq, each the size of its parameter.
        self.assertEqual(after_step["optimizer_state"], 2 * self.torch["parameter_bytes"])
        self.assertEqual(after_step["gradient"], self.torch["parameter_bytes"])
        for moment, roles in zip(MARKS, (before, after_backward, after_step)):
            self.assertEqual(sum(roles.values()), allocated[moment], moment)
            self.assertEqual(roles["unknown"], 0, (moment, roles))
            self.assertEqual(roles["temporary"], 0, (moment, roles))
        # The default moment is the blocks' peak: max_memory_allocated, mostly the temporaries
        # of backward.
        peak = self.roles(self.plain, "peak")
        self.assertEqual(sum(peak.values()), self.torch["max_allocated"])
        self.assertGreater(peak["temporary"], 0)
        self.assertEqual(peak["unknown"], 0)

    def test_roles_equal_memtrackers_categories_at_each_mark(self) -> None:
        for moment in MARKS:
            category = self.tracker["memtracker"][moment]
            roles = self.roles(self.tracked, moment)
            self.assertEqual(roles, {
                "parameter": category["Parameter"] + category["Buffer"],
                "gradient": category["Gradient"],
                "optimizer_state": category["Optstate"],
                "activation": category["Activation"],
                "temporary": category["Temp"],
                "unknown": 0,
            }, moment)
            self.assertEqual(category["Total"], self.tracker["allocated"][moment])

    def test_advice_gives_each_remedys_saving_where_it_applies(self) -> None:
        def advice(moment: str) -> Tuple[Dict[str, Dict[str, int]], Dict[str, int]]:
            (process,) = torch_run.report("roles", self.plain, "--at", moment)["processes"]
            return {a["id"]: a["evidence"] for a in process["advice"]}, process["roles"]

        at_peak, roles = advice("peak")
        # The blocks' peak is in backward: activations a quarter of it, no optimizer state yet.
        self.assertEqual(at_peak["activation_checkpointing"]["saving_bytes"], roles["activation"])
        self.assertEqual(at_peak["micro_batches"]["saving_bytes"],
                         (roles["activation"] + roles["temporary"]) // 2)
        self.assertEqual(at_peak["mixed_precision"]["saving_bytes"],
                         (roles["activation"] + roles["gradient"]) // 2)
        self.assertNotIn("lighter_optimizer", at_peak)
        self.assertNotIn("sharding", at_peak)  # one process, no distributed job
        after_step, roles = advice("after step")
        # Adam's two states per parameter: SGD with momentum keeps one.
        self.assertEqual(after_step["lighter_optimizer"]["saving_bytes"],
                         self.torch["parameter_bytes"])
        self.assertEqual(after_step["lighter_optimizer"]["optimizer_state_bytes"],
                         roles["optimizer_state"])
        text = subprocess.run([torch_run.vramtrace_binary(), "roles", self.plain, "--at",
                               "after step"], capture_output=True, text=True, timeout=120).stdout
        self.assertIn("[lighter_optimizer] Adam's state is 25% of 'after step', 4.0 MiB.", text)

    def test_text_lists_every_role_with_its_share(self) -> None:
        result = subprocess.run([torch_run.vramtrace_binary(), "roles", self.plain, "--at",
                                 "after step"], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        lines = result.stdout.splitlines()
        self.assertTrue(lines[0].startswith("vramtrace: live blocks by role in "), lines)
        for role in ROLES:
            self.assertTrue(any(line.split()[:1] == [role] for line in lines), (role, lines))
        optimizer = next(line for line in lines if line.split()[:1] == ["optimizer_state"])
        self.assertIn("4.0 MiB", optimizer)
        self.assertIn("6 blocks", optimizer)

    def gate(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([torch_run.vramtrace_binary(), "gate", self.plain, *args],
                              capture_output=True, text=True, timeout=120)

    def test_gate_max_role_judges_the_activations_at_the_blocks_peak(self) -> None:
        activation = self.roles(self.plain, "peak")["activation"]
        self.assertGreater(activation, 1 << 20)
        self.assertLess(activation, 1 << 30)
        over = self.gate("--max-role", "activation=1MiB", "--format", "json")
        self.assertEqual(over.returncode, 1, over.stdout + over.stderr)
        (check,) = json.loads(over.stdout)["checks"]
        self.assertEqual(check["name"], "role.activation")
        self.assertEqual(check["actual"], activation)
        self.assertEqual(check["limit"], 1 << 20)
        self.assertFalse(check["passed"])
        under = self.gate("--max-role", "activation=1GiB")
        self.assertEqual(under.returncode, 0, under.stdout + under.stderr)
        self.assertIn("PASS role.activation (pid ", under.stdout)

    def test_summarys_block_peak_roles_are_the_roles_at_the_peak(self) -> None:
        peaks = [peak for peak in torch_run.report("summary", self.plain)["block_peaks"]
                 if peak["roles"] is not None]
        self.assertEqual(len(peaks), 1, peaks)
        report = torch_run.report("roles", self.plain)
        (process,) = report["processes"]
        self.assertEqual(peaks[0]["roles"], process["roles"])
        self.assertEqual(peaks[0]["at_seq"], process["seq"])
        self.assertEqual(peaks[0]["bytes"], sum(process["roles"].values()))

    def test_peak_shows_every_block_live_at_max_memory_allocated_by_stack(self) -> None:
        # `vramtrace run` kept what was live at the peak added up by stack as it recorded
        # (docs/schema.md, live_at_peak); the report reads those sums, not the blocks.
        report = torch_run.report("peak", self.plain)
        (peak,) = [p for p in report["peaks"] if p["level"] == "blocks"]
        self.assertEqual(peak["bytes"], self.torch["max_allocated"])
        trace = torch_run.Trace(self.plain)
        try:
            live = trace.count(
                "SELECT count(*) FROM allocation WHERE result = 0 AND kind = ? AND upid = ? "
                "AND alloc_seq <= ? AND (free_seq IS NULL OR free_seq > ?)",
                trace.kinds["block"], peak["upid"], peak["seq"], peak["seq"])
        finally:
            trace.close()
        self.assertEqual(peak["live_count"], live)
        self.assertGreater(live, 10)
        for tree in ("top_down", "bottom_up"):
            self.assertEqual(sum(node["bytes"] for node in peak[tree]), peak["bytes"], tree)
            self.assertEqual(sum(node["count"] for node in peak[tree]), live, tree)

    def test_summarys_advice_is_the_roles_where_they_are_known(self) -> None:
        advice = torch_run.report("summary", self.plain)["advice"]
        (process,) = torch_run.report("roles", self.plain)["processes"]
        by_role = {a["id"]: a for a in process["advice"]}
        ids = [a["id"] for a in advice]
        # Each remedy the roles name once, with the roles' estimate and the pid in front.
        for id_ in by_role:
            self.assertEqual(ids.count(id_), 1, ids)
            entry = next(a for a in advice if a["id"] == id_)
            self.assertEqual(entry["evidence"], by_role[id_]["evidence"])
            self.assertTrue(entry["text"].startswith(f"pid {process['pid']}: "), entry["text"])
        self.assertIn("activation_checkpointing", by_role)


if __name__ == "__main__":
    torch_run.main()
