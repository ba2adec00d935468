"""Two tests over the stand-in caching allocator (ctypes), run by test_pytest_plugin.py under
`vramtrace run` with the plugin: one keeps a tensor-sized block alive past its end, one frees
everything it makes. `vramtrace gate` must blame exactly the first, at the line that
allocated."""

import ctypes
import os

lib = ctypes.CDLL(os.environ["SIM_C10_CUDA_LIBRARY"])
lib.sim_alloc.restype = ctypes.c_void_p
lib.sim_alloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
lib.sim_free.argtypes = [ctypes.c_void_p]

KEPT = []  # what the leaking test leaves behind, as a module-level cache would


def test_leaky():
    KEPT.append(lib.sim_alloc(4096, 0))  # PLANT: leaky test
    assert KEPT[-1]


def test_clean():
    ptr = lib.sim_alloc(8192, 0)
    assert ptr
    lib.sim_free(ptr)
