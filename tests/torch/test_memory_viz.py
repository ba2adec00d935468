"""`vramtrace export --memory-viz` against torch itself: the pickle, loaded with `pickle` and read
by torch.cuda._memory_viz (segsum, trace, trace_plot, segment_plot), has the numbers of
`vramtrace frag --format json` at the same moment (the end), and the segments, active blocks and
allocator events of torch.cuda.memory._snapshot() that the workload dumped at its end, one for
one."""

from __future__ import annotations

import pickle
import re
import subprocess
from typing import Any, Dict, List, Tuple

import torch_run
from torch_run import WORKLOADS, TempDirTest

# torch.cuda._memory_viz, imported once torch_run.main() has found that torch runs.
_memory_viz: Any = None

WORKLOAD = WORKLOADS / "memory_viz_snapshot.py"


def segments(snapshot: Dict[str, Any]) -> List[Tuple[int, int]]:
    return sorted((segment["address"], segment["total_size"]) for segment in snapshot["segments"])


def active_blocks(snapshot: Dict[str, Any]) -> List[Tuple[int, int]]:
    return sorted((block["address"], block["size"]) for segment in snapshot["segments"]
                  for block in segment["blocks"] if block["state"] == "active_allocated")


def events(snapshot: Dict[str, Any]) -> List[Tuple[str, int, int]]:
    (device,) = snapshot["device_traces"]
    return [(entry["action"], entry["addr"], entry["size"]) for entry in device]


def summary_line(text: str, name: str) -> str:
    match = re.search(rf"^{name}: (.*)$", text, re.MULTILINE)
    if match is None:
        raise AssertionError(f"segsum printed no '{name}:' line:\n{text}")
    return match.group(1)


class MemoryVizTest(TempDirTest):
    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        global _memory_viz
        from torch.cuda import _memory_viz  # pylint: disable=import-outside-toplevel
        cls.trace = cls.path("memory_viz.db")
        torch_pickle = cls.torch_pickle = cls.path("torch.pickle")
        torch_run.record(cls.trace, torch_run.python(WORKLOAD, torch_pickle))
        with open(torch_pickle, "rb") as file:
            cls.torch = pickle.load(file)
        cls.pickle = cls.path("vramtrace.pickle")
        result = subprocess.run([torch_run.vramtrace_binary(), "export", cls.trace,
                                 "--memory-viz", cls.pickle], capture_output=True, text=True,
                                timeout=120)
        if result.returncode != 0:
            raise AssertionError(f"export --memory-viz failed ({result.returncode}): "
                                 f"{result.stderr}")
        cls.said = result.stdout
        with open(cls.pickle, "rb") as file:
            cls.ours = pickle.load(file)
        cls.frag = torch_run.report("frag", cls.trace)

    def test_segsum_reads_it_with_frags_numbers(self) -> None:
        text = _memory_viz.segsum(self.ours)  # raises when a segment's blocks do not add up
        frag_segments = self.frag["segments"]
        reserved = sum(segment["size"] for segment in frag_segments)
        used = sum(block["size"] for segment in frag_segments for block in segment["blocks"]
                   if block["state"] == "used")
        self.assertEqual(int(summary_line(text, "segments")), len(frag_segments))
        self.assertEqual(summary_line(text, "total_reserved"), repr(_memory_viz.Bytes(reserved)))
        # The workload's requests are whole blocks: no internal free space.
        self.assertEqual(summary_line(text, "total_allocated"), repr(_memory_viz.Bytes(used)))
        self.assertEqual(summary_line(text, "total_free"),
                         _memory_viz._report_free(self.frag["total_free"], 0))
        # Segment by segment, exactly: what segsum adds up of each.
        got = []
        for segment in sorted(self.ours["segments"], key=lambda s: s["address"]):
            allocated = sum(block["requested_size"] for block in segment["blocks"]
                            if block["state"] == "active_allocated")
            got.append((segment["device"], segment["address"], segment["total_size"], allocated,
                        [(block["address"], block["size"],
                          "used" if block["state"] == "active_allocated" else "free")
                         for block in segment["blocks"]]))
        expected = [(segment["device"], segment["address"], segment["size"],
                     sum(block["size"] for block in segment["blocks"]
                         if block["state"] == "used"),
                     [(block["address"], block["size"], block["state"])
                      for block in segment["blocks"]])
                    for segment in frag_segments]
        self.assertEqual(got, expected)

    def test_segsum_says_what_it_says_of_torchs_own(self) -> None:
        self.assertEqual(_memory_viz.segsum(self.ours), _memory_viz.segsum(self.torch))

    def test_stats_and_trace_print_what_they_print_of_torchs_own(self) -> None:
        # The command-line tools people run on a snapshot, on ours and on torch's own of the
        # same run: the same text. (The workload's sizes are multiples of 512 bytes: a block's
        # requested size is not in the trace when it is less than the block's.)
        for tool in ("stats", "trace"):
            printed = [subprocess.run([torch_run.torch_python(), "-m", "torch.cuda._memory_viz",
                                       tool, path], capture_output=True, text=True, timeout=120)
                       for path in (self.pickle, self.torch_pickle)]
            for result in printed:
                self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(printed[0].stdout, printed[1].stdout, tool)
            self.assertGreater(len(printed[0].stdout.splitlines()), 5, tool)

    def test_segments_equal_torchs_snapshot(self) -> None:
        self.assertEqual(segments(self.ours), segments(self.torch))
        # Small (2 MiB) and large segments both, or the workload is not testing what it says.
        sizes = [size for _, size in segments(self.ours)]
        self.assertIn(2 << 20, sizes)
        self.assertGreater(len(sizes), 2)
        by_address = {segment["address"]: segment for segment in self.torch["segments"]}
        for segment in self.ours["segments"]:
            theirs = by_address[segment["address"]]
            for key in ("device", "segment_type", "allocated_size", "active_size", "stream",
                        "is_expandable"):
                self.assertEqual(segment[key], theirs[key], key)

    def test_active_blocks_equal_torchs_snapshot(self) -> None:
        self.assertEqual(active_blocks(self.ours), active_blocks(self.torch))
        self.assertGreater(len(active_blocks(self.ours)), 5)

    def test_device_trace_equals_torchs_history(self) -> None:
        # The workload turned torch's history on before its first allocation: every event is
        # in both, in the same order, with the same address and size.
        self.assertEqual(events(self.ours), events(self.torch))
        actions = {action for action, _, _ in events(self.ours)}
        self.assertTrue({"segment_alloc", "segment_free", "alloc", "free_requested",
                         "free_completed"} <= actions, actions)

    def test_keys_are_torchs(self) -> None:
        theirs, ours = self.torch["segments"][0], self.ours["segments"][0]
        self.assertEqual(sorted(ours), sorted(theirs))
        self.assertEqual(sorted(ours["blocks"][0]), sorted(theirs["blocks"][0]))
        entry_keys = set(self.torch["device_traces"][0][0])
        for entry in self.ours["device_traces"][0]:
            self.assertLessEqual(set(entry), entry_keys | {"device_free"})
        self.assertLessEqual(set(self.ours), set(self.torch))

    def test_frames_are_torchs_python_frames_and_native_ones(self) -> None:
        def python_frames(snapshot: Dict[str, Any]) -> Dict[int, List[Tuple[str, int, str]]]:
            # torch names a frame by its code's name, the trace by its qualified name.
            return {block["address"]: [(frame["filename"], frame["line"],
                                        frame["name"].split(".")[-1])
                                       for frame in block["frames"]
                                       if frame["filename"] == str(WORKLOAD)]
                    for segment in snapshot["segments"] for block in segment["blocks"]
                    if block["state"] == "active_allocated"}

        ours = python_frames(self.ours)
        self.assertEqual(ours, python_frames(self.torch))
        self.assertTrue(all(frames and frames[0][2] == "floats" for frames in ours.values()))
        block = next(block for segment in self.ours["segments"] for block in segment["blocks"]
                     if block["state"] == "active_allocated")
        self.assertTrue(any("CUDACachingAllocator" in frame["name"] for frame in block["frames"]))

    def test_torchs_viewers_accept_it(self) -> None:
        for page in (_memory_viz.trace_plot(self.ours), _memory_viz.segment_plot(self.ours),
                     _memory_viz.trace_plot(self.ours, plot_segments=True)):
            self.assertIn("snapshot.pickle", page)
        self.assertIn(f"{len(events(self.ours))} entries", _memory_viz.trace(self.ours))
        result = subprocess.run([torch_run.torch_python(), "-m", "torch.cuda._memory_viz", "stats",
                                 self.pickle], capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"segments: {len(self.frag['segments'])}", result.stdout)

    def test_says_what_it_wrote(self) -> None:
        self.assertIn(f"{len(self.ours['segments'])} segments, "
                      f"{len(active_blocks(self.ours))} active blocks, "
                      f"{len(events(self.ours))} trace entries)", self.said)


class MemoryVizExpandableTest(TempDirTest):
    """With expandable segments the trace ties a block to the mapping its start is in, so a
    mapping that holds only a block's tail is not a segment to `frag` nor to the export, and
    torch's segment there is longer than the trace's: the export must still agree with `frag` and
    be read by torch's tools."""

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        global _memory_viz
        from torch.cuda import _memory_viz  # pylint: disable=import-outside-toplevel
        trace = cls.path("expandable.db")
        torch_pickle = cls.path("torch.pickle")
        torch_run.record(trace, torch_run.python(WORKLOAD, torch_pickle),
                         env=torch_run.child_env(PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"))
        with open(torch_pickle, "rb") as file:
            cls.torch = pickle.load(file)
        pickled = cls.path("vramtrace.pickle")
        result = subprocess.run([torch_run.vramtrace_binary(), "export", trace, "--memory-viz",
                                 pickled], capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise AssertionError(f"export --memory-viz failed ({result.returncode}): "
                                 f"{result.stderr}")
        with open(pickled, "rb") as file:
            cls.ours = pickle.load(file)
        cls.frag = torch_run.report("frag", trace)

    def test_segments_are_frags_and_torchs_tools_read_them(self) -> None:
        text = _memory_viz.segsum(self.ours)
        self.assertEqual(int(summary_line(text, "segments")), len(self.frag["segments"]))
        self.assertEqual(segments(self.ours),
                         sorted((segment["address"], segment["size"])
                                for segment in self.frag["segments"]))
        self.assertTrue(all(segment["is_expandable"] for segment in self.ours["segments"]))
        self.assertIn("snapshot.pickle", _memory_viz.segment_plot(self.ours))
        self.assertIn("snapshot.pickle", _memory_viz.trace_plot(self.ours))

    def test_segments_start_where_torchs_do(self) -> None:
        self.assertEqual([address for address, _ in segments(self.ours)],
                         [address for address, _ in segments(self.torch)])
        self.assertEqual([segment["segment_type"] for segment in
                          sorted(self.ours["segments"], key=lambda s: s["address"])],
                         [segment["segment_type"] for segment in
                          sorted(self.torch["segments"], key=lambda s: s["address"])])
        self.assertEqual([address for address, _ in active_blocks(self.ours)],
                         [address for address, _ in active_blocks(self.torch)])


if __name__ == "__main__":
    torch_run.main()
