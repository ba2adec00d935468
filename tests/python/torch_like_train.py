"""A training loop in the shape of a PyTorch one, over the stand-in caching allocator
(tests/simcuda/c10: libc10_cuda_sim.so) through ctypes, run under `vramtrace run` by
test_python_stacks.py. It plants what that test looks for, at lines it finds by their
`# PLANT:` comments:

- a leak: each step's loss is kept in a list (the classic `losses.append(loss)` without
  `.item()`), so STEPS small blocks stay live at exit;
- an out-of-memory: one request larger than the simulated GPU (the allocator tries cudaMalloc,
  empties its cache, tries again, then reports the OOM: three failed allocations);
- allocations made without the GIL (ctypes.CDLL releases it around the call, as PyTorch's
  operators do), which keep their native stacks only;
- a cache at exit: the activations' segments are freed blocks the allocator keeps.

With RELEASE_LOSSES=1 it drops the losses before exit: the fixed program, with no leak.

It prints one line of JSON: what it did, for the test to compare with the trace."""

import ctypes
import json
import os
import sys

STEPS = 6
LOSS_BYTES = 512  # one rounding unit: the losses share one small segment
ACTIVATION_BYTES = 3 << 20  # large pool: a segment of its own, cached when freed

library_path = os.environ["SIM_C10_CUDA_LIBRARY"]
# PyDLL keeps the GIL during the call, as a Python-level allocation (a tensor's constructor
# in Python code) does; CDLL releases it.
with_gil = ctypes.PyDLL(library_path)
without_gil = ctypes.CDLL(library_path)
for lib in (with_gil, without_gil):
    lib.sim_alloc.restype = ctypes.c_void_p
    lib.sim_alloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
    lib.sim_free.restype = ctypes.c_int
    lib.sim_free.argtypes = [ctypes.c_void_p]


class Stats(ctypes.Structure):
    _fields_ = [("allocated_bytes", ctypes.c_uint64), ("reserved_bytes", ctypes.c_uint64),
                ("active_blocks", ctypes.c_uint64), ("segments", ctypes.c_uint64)]


class Tensor:
    """Device memory held for as long as the object lives."""

    def __init__(self, nbytes, lib=with_gil):
        self.nbytes = nbytes
        self.lib = lib
        self.ptr = lib.sim_alloc(nbytes, 0)  # PLANT: tensor allocation
        if not self.ptr:
            raise MemoryError(f"out of memory allocating {nbytes} bytes")

    def __del__(self):
        if getattr(self, "ptr", None):
            self.lib.sim_free(self.ptr)  # PLANT: tensor free


def forward(batch):
    activation = Tensor(ACTIVATION_BYTES)  # PLANT: activation
    loss = Tensor(LOSS_BYTES)  # PLANT: loss
    del activation
    return loss


def train():
    losses = []
    for step in range(STEPS):
        loss = forward(step)
        losses.append(loss)  # PLANT: the leak (kept beyond the step)
    return losses


def evaluate():
    activation = Tensor(ACTIVATION_BYTES)  # PLANT: evaluation
    del activation


def background_without_gil():
    scratch = [Tensor(LOSS_BYTES, without_gil) for _ in range(3)]  # PLANT: without gil
    del scratch  # PLANT: without gil free


def planted_oom():
    try:
        Tensor(1 << 50)  # PLANT: oom request
    except MemoryError:
        return True
    return False


kept = train()
background_without_gil()
# The allocator empties its cache before it gives up, so the OOM comes before the evaluation
# whose segment is then cached at exit.
oom_seen = planted_oom()
evaluate()
if os.environ.get("RELEASE_LOSSES") == "1":
    kept.clear()  # the fixed script: nothing leaks, the allocator's cache remains
stats = Stats()
with_gil.sim_stats(0, ctypes.byref(stats))
print(json.dumps({
    "steps": STEPS,
    "loss_bytes": LOSS_BYTES,
    "oom_seen": oom_seen,
    "oom_request": 1 << 50,
    "allocated_bytes": stats.allocated_bytes,
    "reserved_bytes": stats.reserved_bytes,
    "active_blocks": stats.active_blocks,
    "segments": stats.segments,
}))
sys.stdout.flush()
# Exit with the losses still referenced: os._exit skips the interpreter's teardown, as a job
# that is killed or ends by os._exit does, so the trace sees the blocks live at exit.
os._exit(0)
