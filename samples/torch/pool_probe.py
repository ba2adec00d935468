"""How the driver's stream-ordered pool counts, seen through PyTorch's cudaMallocAsync backend.

With PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, torch.cuda.memory_allocated() and
memory_reserved() are the default pool's cudaMemPoolAttrUsedMemCurrent and ReservedMemCurrent,
and torch sets the pool's release threshold to the largest value, so the pool keeps what it
took until torch.cuda.empty_cache() trims it. The probe allocates one tensor at a time (sizes
from 1 byte to 1 GiB), reads the counters while it is held and after it is freed, and checks
what vramtrace and the simulated GPU (tests/simcuda) assume of the real pool:

- used: the bytes asked for, unrounded, so that a trace's live `async` bytes are
  memory_allocated() and their peak max_memory_allocated();
- reserved: taken in 32 MiB granules, the pool reusing what it holds before it grows;
- kept after the free, at synchronizations too, and given back by empty_cache().

It prints one JSON line per size, then PASS or FAIL per claim; exit status 1 when a claim fails,
2 when torch runs another allocator backend. samples/gpu/check.sh runs it on the real GPU,
tests/torch/test_backends.py on the simulated one.

Usage: PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync python pool_probe.py"""

import json
import sys

import torch

MIB = 1 << 20
GRANULE = 32 * MIB
SIZES = [1, 4, 511, 513, 4096, MIB - 1, 2 * MIB + 1, 31 * MIB, 32 * MIB, 32 * MIB + 1,
         48 * MIB, 64 * MIB, 64 * MIB + 4, 100 * MIB, 1 << 30]


def counters():
    torch.cuda.synchronize()
    return {"allocated": torch.cuda.memory_allocated(), "reserved": torch.cuda.memory_reserved(),
            "max_allocated": torch.cuda.max_memory_allocated()}


def round_up(size: int) -> int:
    return (size + GRANULE - 1) // GRANULE * GRANULE


def main() -> int:
    backend = torch.cuda.get_allocator_backend()
    if backend != "cudaMallocAsync":
        print(f"pool_probe: torch runs the {backend} backend; set "
              "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync", file=sys.stderr)
        return 2
    failures = {"used": [], "reserved": [], "kept": []}
    expected_reserved = counters()["reserved"]
    largest = 0
    for size in SIZES:
        tensor = torch.empty(size, dtype=torch.uint8, device="cuda")
        held = counters()
        del tensor
        freed = counters()
        print(json.dumps({"size": size, "held": held, "freed": freed}))
        expected_reserved = max(expected_reserved, round_up(size))
        largest = max(largest, size)
        if held["allocated"] != size or held["max_allocated"] != largest:
            failures["used"].append(size)
        if held["reserved"] != expected_reserved:
            failures["reserved"].append(size)
        if freed["reserved"] != held["reserved"] or freed["allocated"] != 0:
            failures["kept"].append(size)
    torch.cuda.empty_cache()
    emptied = counters()
    print(json.dumps({"after_empty_cache": emptied}))

    claims = [
        ("used", "memory_allocated() is the bytes asked for, unrounded, at every size"),
        ("reserved", f"memory_reserved() grows in {GRANULE // MIB} MiB granules, reusing what "
                     "the pool holds"),
        ("kept", "the pool keeps what it took after the free and the synchronization"),
    ]
    status = 0
    for key, claim in claims:
        if failures[key]:
            print(f"FAIL {claim}: not at sizes {failures[key]}")
            status = 1
        else:
            print(f"PASS {claim}")
    if emptied["reserved"] == 0:
        print("PASS empty_cache() gives all of it back")
    else:
        print(f"FAIL empty_cache() left {emptied['reserved']} bytes reserved")
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
