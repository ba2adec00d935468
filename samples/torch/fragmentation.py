"""Fragments PyTorch's caching allocator until a request fails although enough memory is
free, for `vramtrace run` on a real GPU. Run it twice:

    python fragmentation.py                                   # ends in an OOM
    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python fragmentation.py   # does not

The process is capped at 1 GiB (torch.cuda.set_per_process_memory_fraction). Nine rounds
each make a 100 MiB segment, free it, and keep a 60 MiB tensor carved from it, so every
segment holds 60 MiB live and a 40 MiB gap: 540 MiB live, 360 MiB free in 40 MiB pieces.
A 200 MiB request then finds no gap that fits and no room under the cap for a new segment,
and no segment can be given back (each holds a live tensor): an OOM with 484 MiB free.
With expandable segments the allocator can unmap the gaps' pages and map them again where
the request fits, so the same request succeeds.

Prints one JSON line: {"oom": true|false, "allocated": N, "reserved": N}. Exit status 0
either way: the OOM is the expected outcome, not a failure of the sample."""

import json

import torch

MiB = 1 << 20


def main() -> None:
    device = torch.device("cuda", torch.cuda.current_device())  # the cap needs an index
    total = torch.cuda.get_device_properties(device).total_memory
    torch.cuda.set_per_process_memory_fraction((1024 * MiB) / total, device)
    kept = []
    for _ in range(9):
        scratch = torch.empty(100 * MiB, dtype=torch.uint8, device=device)
        del scratch  # the 100 MiB segment is cached, whole
        kept.append(torch.empty(60 * MiB, dtype=torch.uint8, device=device))  # split from it
    oom = False
    try:
        big = torch.empty(200 * MiB, dtype=torch.uint8, device=device)  # the request that fails
        del big
    except torch.cuda.OutOfMemoryError:
        oom = True
    torch.cuda.synchronize()
    print(json.dumps({
        "oom": oom,
        "allocated": torch.cuda.memory_allocated(),
        "reserved": torch.cuda.memory_reserved(),
    }), flush=True)


if __name__ == "__main__":
    main()
