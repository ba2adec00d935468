"""Out of memory on a 1 GiB simulated GPU:
- torch raises torch.OutOfMemoryError, and `vramtrace oom` reports the allocator's failed
  request with the size torch's message gives ("Tried to allocate X"), and what was live and
  reserved then as memory_allocated()/memory_reserved() said just before;
- samples/torch/fragmentation.py ends in an OOM without expandable segments, which `vramtrace
  oom` explains as fragmentation, and in none with them."""

from __future__ import annotations

import re
import subprocess
import unittest

import torch_run
from torch_run import SAMPLES, WORKLOADS, TempDirTest

MEMORY = "1GiB"


class OomTest(TempDirTest):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.trace = cls.path("oom.db")
        result = torch_run.record(cls.trace, torch_run.python(WORKLOADS / "oom_request.py"),
                                  memory=MEMORY)
        (cls.torch,) = torch_run.json_lines(result.stdout)
        cls.ooms = torch_run.report("oom", cls.trace)["ooms"]

    def allocator_oom(self):
        found = [oom for oom in self.ooms if oom["kind"] == "block"]
        self.assertEqual(len(found), 1, self.ooms)
        return found[0]

    def test_torch_raised_out_of_memory(self) -> None:
        self.assertTrue(self.torch["oom"], self.torch)
        self.assertIn("Tried to allocate", self.torch["message"])

    def test_requested_size_is_torchs(self) -> None:
        match = re.search(r"Tried to allocate ([0-9.]+ (?:bytes|KiB|MiB|GiB))",
                          self.torch["message"])
        self.assertIsNotNone(match, self.torch["message"])
        oom = self.allocator_oom()
        self.assertEqual(oom["api"], "c10::reportOutOfMemoryToProfiler")
        self.assertEqual(oom["requested_bytes"], torch_run.parse_torch_size(match.group(1)))
        self.assertEqual(oom["requested_bytes"], 3 << 30)

    def test_live_and_reserved_at_the_oom_are_torchs(self) -> None:
        oom = self.allocator_oom()
        allocator = oom["allocator"]
        self.assertEqual((allocator["allocated"], allocator["reserved"]),
                         (self.torch["allocated"], self.torch["reserved"]))
        self.assertEqual(allocator["live_block_bytes"], self.torch["allocated"])
        self.assertEqual(allocator["segment_bytes"], self.torch["reserved"])
        self.assertEqual(oom["live"]["by_kind"].get("block"), self.torch["allocated"])

    def test_the_failed_cuda_malloc_is_recorded_too(self) -> None:
        # Before reporting an OOM the allocator asked the device, which refused.
        device = [oom for oom in self.ooms if oom["kind"] == "device"]
        self.assertTrue(device, self.ooms)
        self.assertTrue(all(oom["requested_bytes"] == 3 << 30 for oom in device), device)


class FragmentationSampleTest(TempDirTest):
    def run_sample(self, name: str, **env: str):
        trace = self.path(name)
        result = torch_run.record(trace, torch_run.python(SAMPLES / "fragmentation.py"),
                                  env=torch_run.child_env(**env))
        (line,) = torch_run.json_lines(result.stdout)
        return trace, line

    def test_ooms_without_expandable_segments_and_not_with_them(self) -> None:
        trace, line = self.run_sample("frag.db")
        self.assertTrue(line["oom"], line)
        ooms = torch_run.report("oom", trace)["ooms"]
        (oom,) = [oom for oom in ooms if oom["kind"] == "block"]
        self.assertEqual(oom["requested_bytes"], 200 << 20)
        self.assertIn("fragmentation", [advice["id"] for advice in oom["advice"]])
        self.assertEqual(oom["allocator"]["live_block_bytes"], line["allocated"])

        trace, line = self.run_sample("frag_es.db",
                                      PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
        self.assertFalse(line["oom"], line)
        self.assertEqual(torch_run.report("oom", trace)["ooms"], [])


if __name__ == "__main__":
    torch_run.main()


class TrainingUntilOomTest(TempDirTest):
    """A training loop that dies of torch.OutOfMemoryError: `oom`'s first screen is the failure
    that raised, with torch's own numbers and the script's line from its traceback."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        cls.script = WORKLOADS / "train_until_oom.py"
        cls.trace = cls.path("train.db")
        result = torch_run.record(cls.trace, torch_run.python(cls.script), memory="768MiB",
                                  check=False)
        cls.stderr = result.stderr
        cls.steps = torch_run.json_lines(result.stdout)
        cls.message = next((line for line in result.stderr.splitlines()
                            if line.startswith("torch.OutOfMemoryError: ")), None)
        # The traceback's last line of the script: where the error came out of the user's code.
        lines = re.findall(rf'File "{re.escape(str(cls.script))}", line (\d+)', result.stderr)
        cls.raised_line = int(lines[-1]) if lines else None
        text = subprocess.run([torch_run.vramtrace_binary(), "oom", cls.trace],
                              capture_output=True, text=True, timeout=120)
        cls.text = text.stdout
        cls.ooms = torch_run.report("oom", cls.trace)["ooms"]

    def torch_said(self, pattern: str) -> str:
        self.assertIsNotNone(self.message, self.stderr)
        match = re.search(pattern, self.message)
        self.assertIsNotNone(match, self.message)
        return match.group(1)

    def test_the_process_died_of_the_error(self) -> None:
        self.assertIsNotNone(self.message, self.stderr)
        self.assertIsNotNone(self.raised_line, self.stderr)

    def test_first_screen_is_the_failure_that_raised(self) -> None:
        lines = self.text.splitlines()
        self.assertLessEqual(len(lines), 40, self.text)
        requested = self.torch_said(r"Tried to allocate ([0-9.]+ (?:bytes|KiB|MiB|GiB))")
        first = next(line for line in lines[1:] if line.strip())
        self.assertTrue(first.startswith("torch.OutOfMemoryError in pid "), self.text)
        self.assertTrue(first.endswith(f"tried to allocate {requested}"), self.text)

    def test_torchs_numbers_as_its_message_gives_them(self) -> None:
        allocated = self.torch_said(r"([0-9.]+ (?:bytes|KiB|MiB|GiB)) is allocated by PyTorch")
        unallocated = self.torch_said(
            r"([0-9.]+ (?:bytes|KiB|MiB|GiB)) is reserved by PyTorch but unallocated")
        self.assertIn(f"PyTorch then: {allocated} allocated, {unallocated} reserved but "
                      "unallocated", self.text)
        capacity = self.torch_said(r"total capacity of ([0-9.]+ (?:bytes|KiB|MiB|GiB))")
        free = self.torch_said(r"of which ([0-9.]+ (?:bytes|KiB|MiB|GiB)) is free")
        self.assertIn(f"device 0 then: {capacity} total capacity, {free} free", self.text)
        raised = next(oom for oom in self.ooms if oom["outcome"] == "raised")
        self.assertEqual(raised["device_memory"]["total"], torch_run.parse_torch_size(capacity))

    def test_the_line_is_the_scripts_that_raised(self) -> None:
        at = next(line for line in self.text.splitlines() if line.startswith("  at "))
        self.assertTrue(at.startswith(f"  at {self.script.name}:{self.raised_line} in <module>"),
                        f"{at!r}; the traceback says line {self.raised_line}\n{self.text}")

    def test_a_growing_batch_grows_and_leaks_nothing(self) -> None:
        digest = [line for line in self.stderr.splitlines() if line.startswith("vramtrace:")]
        self.assertFalse(any("LEAKS" in line for line in digest), digest)
        self.assertTrue(any("1 torch.OutOfMemoryError raised" in line for line in digest), digest)
        line = torch_run.planted_line(self.script, "batch")
        self.assertTrue(any(re.search(rf"GROWS [0-9.]+ \w+ per iteration at {self.script.name}:"
                                      rf"{line} in <module> \(the same 1 block, larger", text)
                            for text in digest), digest)

    def test_no_one_line_summary_names_a_framework_frame(self) -> None:
        # run's last lines and oom's first screen name stacks in one line each: by the user's
        # line, never a frame of libc10, libtorch or the interpreter.
        framework = re.compile(r"c10::|at::|torch::|libc10|libtorch|libpython|_PyEval|"
                               r"alloc_found_block|site-packages")
        digest = [line for line in self.stderr.splitlines() if line.startswith("vramtrace:")]
        for line in digest + self.text.splitlines():
            self.assertIsNone(framework.search(line), line)

    def test_live_roles_are_the_programs_own_objects(self) -> None:
        self.assertTrue(self.steps, self.stderr)
        truth = self.steps[-1]  # the model and Adam's state, as they were at the error
        raised = next(oom for oom in self.ooms if oom["outcome"] == "raised")
        by_role = {}
        for group in raised["live"]["top"]:
            if group["role"] is not None:
                by_role[group["role"]] = by_role.get(group["role"], 0) + group["bytes"]
        self.assertEqual(by_role.get("parameter"), truth["parameter"], raised["live"]["top"])
        self.assertEqual(by_role.get("optimizer_state"), truth["optimizer_state"])
        self.assertIn("optimizer state", self.text)

    def test_one_raised_and_the_allocators_own_tries(self) -> None:
        outcomes = [oom["outcome"] for oom in self.ooms]
        self.assertEqual(outcomes.count("raised"), 1, outcomes)
        raised = next(oom for oom in self.ooms if oom["outcome"] == "raised")
        self.assertEqual(raised["kind"], "block")
        # Every failed cudaMalloc of torch's allocator before it was one of its tries.
        for oom in self.ooms:
            if oom["kind"] == "device":
                self.assertIn(oom["outcome"], ("retried", "recovered"), oom)
        self.assertIn("retried", outcomes)
        # `--at oom` is the one that raised.
        roles = torch_run.report("roles", self.trace, "--at", "oom")
        self.assertEqual(roles["processes"][0]["seq"], raised["seq"], roles)
