"""What the Python stack walk costs per event, on the simulated GPU.

Runs N allocate/free pairs through the stand-in caching allocator (libc10_cuda_sim.so) at a
Python depth of D frames, four ways: untraced and under `vramtrace run`, each through
ctypes.PyDLL (the GIL held: the shim walks the Python frames) and ctypes.CDLL (the GIL
released: native stack only). The traced difference between the two is the walk.

    python3 bench/python_stack_overhead.py --vramtrace build/release/bin/vramtrace \\
        --library build/release/simcuda/lib/libc10_cuda_sim.so [--pairs N] [--depth D]

Each configuration runs 5 times; the median is printed, in ns per event (2 events a pair)."""

import argparse
import ctypes
import os
import statistics
import subprocess
import sys
import tempfile
import time


def workload(library: str, hold_gil: bool, pairs: int, depth: int) -> float:
    lib = (ctypes.PyDLL if hold_gil else ctypes.CDLL)(library)
    lib.sim_alloc.restype = ctypes.c_void_p
    lib.sim_alloc.argtypes = [ctypes.c_size_t, ctypes.c_int]
    lib.sim_free.argtypes = [ctypes.c_void_p]

    def nest(level: int) -> float:
        if level > 0:
            return nest(level - 1)
        started = time.perf_counter()
        for _ in range(pairs):
            lib.sim_free(lib.sim_alloc(4096, 0))
        return time.perf_counter() - started

    return nest(depth)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vramtrace", required=True)
    parser.add_argument("--library", required=True)
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--child", choices=["gil", "nogil"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        seconds = workload(args.library, args.child == "gil", args.pairs, args.depth)
        print(seconds * 1e9 / (2 * args.pairs))
        return 0

    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for traced in (False, True):
            for mode in ("nogil", "gil"):
                runs = []
                for i in range(5):
                    child = [sys.executable, __file__, "--vramtrace", args.vramtrace,
                             "--library", args.library, "--pairs", str(args.pairs),
                             "--depth", str(args.depth), "--child", mode]
                    if traced:
                        child = [args.vramtrace, "run", "--force", "-o",
                                 os.path.join(tmp, f"{mode}{i}.db"), "--"] + child
                    out = subprocess.run(child, capture_output=True, text=True, check=True)
                    runs.append(float(out.stdout.strip().splitlines()[-1]))
                results[(traced, mode)] = statistics.median(runs)
    for (traced, mode), ns in results.items():
        print(f"{'traced  ' if traced else 'untraced'} {mode:5}: {ns:8.0f} ns per event")
    walk = results[(True, "gil")] - results[(True, "nogil")]
    print(f"Python stack walk at depth {args.depth}: {walk:.0f} ns per event "
          f"(traced GIL-held minus traced GIL-released)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
