"""A loop that leaks one tensor per iteration into a list, then frees its scratch and gives
the cache back with torch.cuda.empty_cache().

Each iteration is a vramtrace.iteration() range ("iteration 0", ...), so that
`vramtrace leaks --growth iteration` sees the kept tensors grow. Around empty_cache() it marks
"before empty_cache" and "after empty_cache" and prints, for each, a JSON line with torch's
counters; the last line is {"planted_bytes", "iterations"}, and "done" is marked after it.
The kept tensors stay referenced to the end of the process (a module-level list, as a cache
would be); Python's teardown frees them after "done", so "done" is where they are live."""

import json

import torch

import vramtrace

MiB = 1 << 20
ITERATIONS = 6
LEAK_BYTES = 2 * MiB   # a multiple of 512: the allocator's block is exactly this size
KEPT = []


def counters(name: str) -> None:
    vramtrace.mark(name)
    print(json.dumps({"marker": name, "allocated": torch.cuda.memory_allocated(),
                      "reserved": torch.cuda.memory_reserved()}), flush=True)


def step(batch: torch.Tensor) -> torch.Tensor:
    scratch = batch * 2 + 1
    KEPT.append(torch.empty(LEAK_BYTES // 4, device="cuda"))  # PLANT: kept per iteration
    return scratch.sum()


def main() -> None:
    batches = [torch.empty(8 * MiB // 4, device="cuda") for _ in range(2)]
    for index in range(ITERATIONS):
        with vramtrace.iteration():
            step(batches[index % 2])
    del batches
    torch.cuda.synchronize()
    counters("before empty_cache")
    torch.cuda.empty_cache()
    counters("after empty_cache")
    print(json.dumps({"planted_bytes": LEAK_BYTES, "iterations": ITERATIONS}), flush=True)
    vramtrace.mark("done")


if __name__ == "__main__":
    main()
