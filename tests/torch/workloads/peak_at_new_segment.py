"""The device's peak reached by a new segment: a 1 GiB tensor, then a 4 GiB one that needs a
segment of its own (the peak), then the 4 GiB one freed and a small tensor made. Prints one JSON
line with torch's snapshot at the peak (after the 4 GiB tensor): {"allocated", "reserved",
"segments": [[address, total_size]], "active": [[address, size]]}."""

import json

import torch

GiB = 1 << 30


def main() -> None:
    kept = torch.empty(GiB, dtype=torch.uint8, device="cuda")
    big = torch.empty(4 * GiB, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    snapshot = torch.cuda.memory_snapshot()
    print(json.dumps({
        "allocated": torch.cuda.memory_allocated(),
        "reserved": torch.cuda.memory_reserved(),
        "segments": sorted([s["address"], s["total_size"]] for s in snapshot),
        "active": sorted([b["address"], b["size"]] for s in snapshot for b in s["blocks"]
                         if b["state"] == "active_allocated"),
    }), flush=True)
    del big
    small = torch.empty(1 << 20, device="cuda")
    torch.cuda.synchronize()
    del small, kept


if __name__ == "__main__":
    main()
