"""Tests with GPU memory limits (vramtrace.pytest's limit_gpu_leaks and limit_gpu_memory marks)
over the stand-in caching allocator (ctypes), run by test_pytest_plugin.py under `vramtrace
run`: exactly the two tests over their limits must fail, the leak named at its line."""

import ctypes
import os

import pytest

lib = ctypes.CDLL(os.environ["SIM_C10_CUDA_LIBRARY"])
lib.sim_alloc.restype = ctypes.c_void_p
lib.sim_alloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
lib.sim_free.argtypes = [ctypes.c_void_p]

MiB = 1 << 20
KEPT = []  # what the leaking tests leave behind, as a module-level cache would


@pytest.mark.limit_gpu_leaks("0B")
def test_leak_over_its_limit():
    KEPT.append(lib.sim_alloc(4096, 0))  # PLANT: leak over the limit


@pytest.mark.limit_gpu_leaks("0B")
def test_clean_under_its_limit():
    lib.sim_free(lib.sim_alloc(8192, 0))


@pytest.mark.limit_gpu_memory("1MiB")
def test_peak_over_its_limit():
    a = lib.sim_alloc(MiB, 0)
    b = lib.sim_alloc(MiB, 0)  # 2 MiB of blocks live at once
    lib.sim_free(a)
    lib.sim_free(b)


@pytest.mark.limit_gpu_memory("4MiB")
@pytest.mark.limit_gpu_leaks("1KiB")
def test_peak_under_its_limit():
    lib.sim_free(lib.sim_alloc(2 * MiB, 0))


class Buffer:
    """Frees its block when collected, as a tensor does."""

    def __init__(self):
        self.ptr = lib.sim_alloc(4096, 0)
        self.me = self  # a reference cycle: only the garbage collector frees it

    def __del__(self):
        lib.sim_free(self.ptr)


@pytest.mark.limit_gpu_leaks("0B")
def test_garbage_in_a_cycle_is_not_a_leak():
    Buffer()


def test_leak_without_a_limit_passes():
    KEPT.append(lib.sim_alloc(4096, 0))
