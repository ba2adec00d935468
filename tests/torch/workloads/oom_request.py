"""Fills part of a small simulated GPU (run it with simgpu --memory 1GiB) with tensors that
use their segments whole, then asks for more than the device has: torch raises
torch.OutOfMemoryError. Prints one JSON line: {"oom", "message", "allocated", "reserved"},
the counters read just before the failing request."""

import json

import torch

MiB = 1 << 20
REQUEST = 3 << 30  # a multiple of 2 MiB: torch's "Tried to allocate" is the exact request


def main() -> None:
    # 200 MiB each: a large block rounded to 2 MiB is its segment's whole size, so nothing is
    # cached that the allocator could free and retry with.
    kept = [torch.empty(200 * MiB, dtype=torch.uint8, device="cuda") for _ in range(3)]
    torch.cuda.synchronize()
    allocated, reserved = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    message = None
    try:
        torch.empty(REQUEST, dtype=torch.uint8, device="cuda")
    except torch.OutOfMemoryError as error:
        message = str(error)
    print(json.dumps({"oom": message is not None, "message": message, "allocated": allocated,
                      "reserved": reserved}), flush=True)
    del kept


if __name__ == "__main__":
    main()
