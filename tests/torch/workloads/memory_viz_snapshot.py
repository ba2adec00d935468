"""Leaves the caching allocator with used and free blocks in small and large segments, one
segment given back by empty_cache(), with torch's memory history on from the first allocation;
then, last, pickles torch.cuda.memory._snapshot() to the file named by argv[1], as
torch.cuda.memory._dump_snapshot() does. Nothing is allocated or freed on the GPU after it: the
tensors are held by module globals, which only the interpreter's teardown frees, after the end
of the program that `vramtrace frag` and `export --memory-viz` look at. Every size is a
multiple of 512 bytes, so that torch's requested sizes are its block sizes, which the trace
has."""

import pickle
import sys

import torch

KiB, MiB = 1 << 10, 1 << 20


def floats(nbytes: int) -> torch.Tensor:
    return torch.empty(nbytes // 4, dtype=torch.float32, device="cuda")


kept: list = []
scratch: list = []


def main() -> None:
    torch.cuda.memory._record_memory_history(max_entries=100000)
    kept[:] = [floats(size) for size in (4 * KiB, 100 * KiB, 512, 300 * KiB, 3 * MiB, 6 * MiB)]
    scratch[:] = [floats(size) for size in (64 * KiB, 2 * MiB, 7 * MiB)]
    big = floats(30 * MiB)
    kept.extend([floats(12 * MiB), floats(40 * MiB)])
    del scratch[1]  # holes between live blocks
    del big
    torch.cuda.empty_cache()  # the 30 MiB segment goes back to the driver
    kept.append(floats(1 * MiB))
    kept.pop(1)
    torch.cuda.synchronize()
    snapshot = torch.cuda.memory._snapshot()
    with open(sys.argv[1], "wb") as out:
        pickle.dump(snapshot, out)
    print("snapshot written", flush=True)


if __name__ == "__main__":
    main()
