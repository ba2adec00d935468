"""Shared helpers of the `torch` tests: PyTorch under the simulated GPU and `vramtrace run`.

Every command goes through tests/simcuda/simgpu with the build under test (VRAMTRACE_BUILD_DIR),
so the simulated libcudart/libcuda and the vramtrace binary always come from the same build.
CTest sets VRAMTRACE_BINARY, VRAMTRACE_BUILD_DIR and TORCH_PYTHON (tests/torch/CMakeLists.txt).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
WORKLOADS = HERE / "workloads"
SAMPLES = ROOT / "samples" / "torch"
SIMGPU = ROOT / "tests" / "simcuda" / "simgpu"

# ctest's SKIP_RETURN_CODE for these tests.
SKIP = 77
# A run of a small workload takes a few seconds (import torch is most of it) on 2 cores.
RUN_TIMEOUT = 180


def vramtrace_binary() -> str:
    path = os.environ.get("VRAMTRACE_BINARY")
    if not path or not os.access(path, os.X_OK):
        raise AssertionError(f"VRAMTRACE_BINARY={path!r} is not an executable: run through CTest")
    return path


def build_dir() -> str:
    path = os.environ.get("VRAMTRACE_BUILD_DIR")
    if not path:
        # By hand: the build that holds VRAMTRACE_BINARY (BUILD/bin/vramtrace).
        path = str(Path(vramtrace_binary()).resolve().parent.parent)
    return path


def torch_python() -> str:
    return os.environ.get("TORCH_PYTHON", str(ROOT / ".venv" / "bin" / "python"))


def child_env(**extra: str) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), str(HERE)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # One simulated GPU: the reports then have one device to talk about.
    env.setdefault("SIMCUDA_DEVICE_COUNT", "1")
    # A caller's allocator settings would change every number these tests compare.
    for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
                 "PYTORCH_NO_CUDA_MEMORY_CACHING"):
        env.pop(name, None)
    env.update(extra)
    return env


def on_real_gpu() -> bool:
    """VRAMTRACE_TORCH_GPU=real: the same tests on the machine's own GPU (samples/gpu/check.sh),
    so that the simulated and the real allocator can be compared."""
    return os.environ.get("VRAMTRACE_TORCH_GPU") == "real"


def simgpu(memory: Optional[str] = None) -> List[str]:
    if on_real_gpu():
        if memory:
            raise unittest.SkipTest(f"needs a simulated GPU of {memory}")
        return []
    command = [str(SIMGPU), "--build", build_dir(), "--devices", "1"]
    if memory:
        command += ["--memory", memory]
    return command + ["--"]


def run(command: Sequence[str], *, memory: Optional[str] = None, env: Optional[Dict[str, str]] = None,
        cwd: Optional[str] = None, timeout: int = RUN_TIMEOUT) -> subprocess.CompletedProcess:
    """COMMAND on the simulated GPU, unrecorded."""
    return subprocess.run([*simgpu(memory), *command], capture_output=True, text=True,
                          env=env or child_env(), cwd=cwd, timeout=timeout)


def record(trace: str, command: Sequence[str], *, memory: Optional[str] = None,
           env: Optional[Dict[str, str]] = None, cwd: Optional[str] = None,
           timeout: int = RUN_TIMEOUT, check: bool = True) -> subprocess.CompletedProcess:
    """COMMAND under `vramtrace run -o TRACE` on the simulated GPU."""
    result = subprocess.run([*simgpu(memory), vramtrace_binary(), "run", "-o", trace, "--",
                             *command], capture_output=True, text=True, env=env or child_env(),
                            cwd=cwd, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"vramtrace run failed ({result.returncode}): {' '.join(command)}\n"
                             f"--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
    return result


def python(script: Path, *args: str) -> List[str]:
    return [torch_python(), str(script), *args]


def json_lines(text: str) -> List[Dict[str, Any]]:
    """The JSON objects a workload printed, one a line; other lines are left out."""
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def report(command: str, trace: str, *args: str) -> Dict[str, Any]:
    """`vramtrace COMMAND TRACE ARGS --format json`, parsed."""
    result = subprocess.run([vramtrace_binary(), command, trace, *args, "--format", "json"],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"vramtrace {command} {' '.join(args)} failed "
                             f"({result.returncode}): {result.stderr}")
    return json.loads(result.stdout)


def planted_line(script: Path, tag: str) -> int:
    """The line of SCRIPT whose comment says `# PLANT: TAG`."""
    for number, line in enumerate(script.read_text().splitlines(), start=1):
        if f"# PLANT: {tag}" in line:
            return number
    raise AssertionError(f"no '# PLANT: {tag}' line in {script}")


def python_frames(stack: Iterable[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [frame for frame in stack if frame.get("language") == "python"]


class Trace:
    """The trace's tables, read by plain SQL (docs/schema.md)."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.kinds = {name: kind for kind, name in
                      self.db.execute("SELECT id, name FROM allocation_kind")}
        self.apis = {name: api for api, name in self.db.execute("SELECT id, name FROM api")}

    def close(self) -> None:
        self.db.close()

    def python_upid(self) -> int:
        """The process that ran torch (the one with allocations)."""
        rows = self.db.execute("SELECT DISTINCT upid FROM allocation").fetchall()
        if len(rows) != 1:
            raise AssertionError(f"expected one process with allocations, got {rows}")
        return rows[0][0]

    def marker_seq(self, name: str) -> int:
        row = self.db.execute("SELECT start_seq FROM marker WHERE name = ? AND type = 'mark' "
                              "ORDER BY start_seq LIMIT 1", (name,)).fetchone()
        if row is None:
            raise AssertionError(f"no mark {name!r} in the trace")
        return row[0]

    def _kind_ids(self, kinds: Sequence[str]) -> List[int]:
        return [self.kinds[kind] for kind in kinds]

    def live_bytes(self, seq: int, kinds: Sequence[str]) -> int:
        """Bytes of the allocations of KINDS live at the marker of sequence number SEQ."""
        ids = self._kind_ids(kinds)
        (total,) = self.db.execute(
            f"SELECT ifnull(sum(size), 0) FROM allocation WHERE result = 0 "
            f"AND kind IN ({','.join('?' * len(ids))}) AND alloc_seq < ? "
            f"AND (free_seq IS NULL OR free_seq > ?)", (*ids, seq, seq)).fetchone()
        return total

    def live_at_end(self, kinds: Sequence[str]) -> int:
        ids = self._kind_ids(kinds)
        (total,) = self.db.execute(
            f"SELECT ifnull(sum(size), 0) FROM allocation WHERE result = 0 AND free_seq IS NULL "
            f"AND kind IN ({','.join('?' * len(ids))})", ids).fetchone()
        return total

    def peak_before(self, seq: int, kinds: Sequence[str], round_to: int = 1) -> int:
        """The most bytes of KINDS live at once before SEQ: a sweep in sequence order. Each
        size is rounded up to a multiple of ROUND_TO first."""
        ids = self._kind_ids(kinds)
        marks = ",".join("?" * len(ids))
        size = f"((size + {round_to - 1}) / {round_to} * {round_to})"
        events = self.db.execute(
            f"SELECT alloc_seq, {size} FROM allocation WHERE result = 0 AND kind IN ({marks}) "
            f"AND alloc_seq < ? UNION ALL SELECT free_seq, -{size} FROM allocation "
            f"WHERE result = 0 AND kind IN ({marks}) AND free_seq < ? ORDER BY 1",
            (*ids, seq, *ids, seq)).fetchall()
        live = peak = 0
        for _, delta in events:
            live += delta
            peak = max(peak, live)
        return peak

    def count(self, sql: str, *args: Any) -> int:
        return self.db.execute(sql, args).fetchone()[0]


def _probe() -> Optional[str]:
    """None when torch runs on the simulated GPU (or the real one); else why not, in one line."""
    where = "the real GPU" if on_real_gpu() else "the simulated GPU"
    python_path = torch_python()
    if not os.access(python_path, os.X_OK):
        return (f"{python_path} is missing: install the pinned PyTorch with "
                f"scripts/install-torch.sh")
    try:
        result = run([python_path, "-c",
                      "import torch; torch.ones(1, device='cuda'); print('torch ok')"],
                     timeout=120)
    except subprocess.TimeoutExpired:
        return f"import torch on {where} did not finish in 120 s"
    if result.returncode != 0 or "torch ok" not in result.stdout:
        tail = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        return f"torch does not run on {where} ({result.returncode}): {tail}"
    return None


def main() -> None:
    """The test modules' entry point: skip (77) or, under CI, fail when torch cannot run."""
    why = _probe()
    if why is not None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            print(f"FAIL: CI is set and {why}", file=sys.stderr)
            sys.exit(1)
        print(f"SKIP: {why}", file=sys.stderr)
        sys.exit(SKIP)
    unittest.main(module="__main__", verbosity=2)


class TempDirTest(unittest.TestCase):
    """A test class with a temporary directory for its traces, kept with VRAMTRACE_KEEP=1."""

    tmp: str

    @classmethod
    def setUpClass(cls) -> None:
        if os.environ.get("VRAMTRACE_KEEP"):
            cls.tmp = tempfile.mkdtemp(prefix=f"torch-{cls.__name__}-")
            print(f"traces kept in {cls.tmp}", file=sys.stderr)
            cls._cleanup = None
        else:
            cls._cleanup = tempfile.TemporaryDirectory(prefix=f"torch-{cls.__name__}-")
            cls.tmp = cls._cleanup.name

    @classmethod
    def tearDownClass(cls) -> None:
        if cls._cleanup is not None:
            cls._cleanup.cleanup()

    @classmethod
    def path(cls, name: str) -> str:
        return os.path.join(cls.tmp, name)


def parse_torch_size(text: str) -> int:
    """torch's format_size ("2.00 GiB", "20.00 MiB", "512 bytes") as bytes; exact only when the
    value is a whole number of the unit to two decimals, which the tests arrange."""
    match = re.fullmatch(r"([0-9.]+) (bytes|KiB|MiB|GiB)", text.strip())
    if not match:
        raise AssertionError(f"not a torch size: {text!r}")
    scale = {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[match.group(2)]
    return round(float(match.group(1)) * scale)
