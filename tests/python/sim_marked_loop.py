"""A loop over the stand-in caching allocator (ctypes) that marks the trace after each step
and prints the allocator's own counters then, in the format of samples/torch/train_leak.py:
the simulated-GPU twin of that sample, for test_compare_with_torch.py."""

import ctypes
import json
import os

import vramtrace

lib = ctypes.CDLL(os.environ["SIM_C10_CUDA_LIBRARY"])
lib.sim_alloc.restype = ctypes.c_void_p
lib.sim_alloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
lib.sim_free.argtypes = [ctypes.c_void_p]


class Stats(ctypes.Structure):
    _fields_ = [("allocated_bytes", ctypes.c_uint64), ("reserved_bytes", ctypes.c_uint64),
                ("active_blocks", ctypes.c_uint64), ("segments", ctypes.c_uint64)]


kept = []
for step in range(8):
    scratch = [lib.sim_alloc(size, 0) for size in (1000, 3 << 20, 700 << 10, (step + 1) << 20)]
    kept.append(lib.sim_alloc(4096 * (step + 1), 0))
    for ptr in scratch[::2]:
        lib.sim_free(ptr)
    kept.extend(scratch[1::2])
    if step % 3 == 2:
        lib.sim_empty_cache()
    stats = Stats()
    lib.sim_stats(0, ctypes.byref(stats))
    name = f"step {step}"
    vramtrace.mark(name)
    print(json.dumps({"marker": name, "allocated": stats.allocated_bytes,
                      "reserved": stats.reserved_bytes}), flush=True)
