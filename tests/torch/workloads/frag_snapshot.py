"""Leaves the caching allocator with used and free blocks in small and large segments, marks
"snapshot", then prints torch.cuda.memory_snapshot()'s segments and active blocks as one JSON
line: {"marker", "segments": [[address, total_size]], "active": [[address, size]]}.
Nothing is allocated between the mark and the snapshot."""

import json

import torch

import vramtrace

KiB, MiB = 1 << 10, 1 << 20


def floats(nbytes: int) -> torch.Tensor:
    return torch.empty(nbytes // 4, dtype=torch.float32, device="cuda")


def main() -> None:
    # Small blocks (at most 1 MiB) share 2 MiB segments; large ones get segments of their own
    # or are split from a 20 MiB one.
    kept = [floats(size) for size in (4 * KiB, 100 * KiB, 512, 300 * KiB, 3 * MiB, 6 * MiB)]
    scratch = [floats(size) for size in (64 * KiB, 2 * MiB, 7 * MiB)]
    kept += [floats(12 * MiB), floats(40 * MiB)]
    del scratch[1]  # holes between live blocks
    kept.append(floats(1 * MiB))
    kept.pop(1)
    torch.cuda.synchronize()
    vramtrace.mark("snapshot")
    snapshot = torch.cuda.memory_snapshot()
    print(json.dumps({
        "marker": "snapshot",
        "segments": sorted([segment["address"], segment["total_size"]] for segment in snapshot),
        "active": sorted([block["address"], block["size"]] for segment in snapshot
                         for block in segment["blocks"] if block["state"] == "active_allocated"),
        "allocated": torch.cuda.memory_allocated(),
        "reserved": torch.cuda.memory_reserved(),
    }), flush=True)
    del kept, scratch


if __name__ == "__main__":
    main()
