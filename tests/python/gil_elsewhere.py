"""Allocations made without the GIL while another thread holds it, over the stand-in caching
allocator (tests/simcuda/c10) through ctypes, run under `vramtrace run` by
test_gil_elsewhere.py.

The main thread allocates and frees in a loop through ctypes.CDLL, which releases the GIL
around each call, as PyTorch's operators do; meanwhile a second thread spins in Python, so
that the GIL is often that thread's while the main thread is inside the allocator, as when
PyTorch's autograd thread takes it to drop Python objects. Up to Python 3.11 the interpreter's
"current thread state" is then the spinner's: a recorder that took it for its own would walk
another thread's frames through the C API without the GIL.

Prints one JSON line: {"allocations": N}."""

import ctypes
import json
import os
import threading

ROUNDS = 400
library = ctypes.CDLL(os.environ["SIM_C10_CUDA_LIBRARY"])
library.sim_alloc.restype = ctypes.c_void_p
library.sim_alloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
library.sim_free.restype = ctypes.c_int
library.sim_free.argtypes = [ctypes.c_void_p]
stop = threading.Event()


def spin_holding_the_gil():
    total = 0
    while not stop.is_set():
        total += sum(range(200))


def allocate_without_the_gil():
    for _ in range(ROUNDS):
        library.sim_free(library.sim_alloc(512, 0))


spinner = threading.Thread(target=spin_holding_the_gil)
spinner.start()
try:
    allocate_without_the_gil()
finally:
    stop.set()
    spinner.join()
print(json.dumps({"allocations": ROUNDS}))
