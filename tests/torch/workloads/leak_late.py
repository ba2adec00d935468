"""A steady training loop of an elementwise model (the shape of bench/torch_step.py, smaller)
that starts to keep one tensor per step late in the run: the repeated steps before it are what
`vramtrace run` folds, the leak is what it must keep in full and find. With OOM_AT, that step
also asks for more than any device has and goes on after torch.OutOfMemoryError, as a loop that
catches it does.

    python leak_late.py STEPS LEAK_FROM [OOM_AT]

Marks "loss" in each step once the loss is made (the activations live), as moments to look at.
Prints one JSON line at the end: {"steps", "leak_from", "kept", "kept_bytes", "allocated",
"oom_at", "oom_bytes"} (torch's memory_allocated() with the kept tensors live; the refused
request), and marks "done" after it."""

import json
import sys

import torch

import vramtrace

KEPT = []
OOM_BYTES = 1 << 40  # more than any device has


def main() -> None:
    steps, leak_from = int(sys.argv[1]), int(sys.argv[2])
    oom_at = int(sys.argv[3]) if len(sys.argv) > 3 else None
    refused = False
    device = torch.device("cuda")
    weights = [torch.zeros(1024, device=device, requires_grad=True) for _ in range(8)]
    optimizer = torch.optim.Adam(weights, lr=1e-3)
    batch = torch.zeros(16, 1024, device=device)
    for step in range(steps):
        x = batch
        for w in weights:
            x = torch.relu(x * w + 1)
        loss = (x * x).mean()
        vramtrace.mark("loss")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if step >= leak_from:
            KEPT.append(torch.empty(4096, device=device))  # PLANT: kept per step
        if step == oom_at:
            try:
                torch.empty(OOM_BYTES, dtype=torch.uint8, device=device)  # PLANT: too large
            except torch.OutOfMemoryError:
                refused = True
    torch.cuda.synchronize()
    print(json.dumps({"steps": steps, "leak_from": leak_from, "kept": len(KEPT),
                      "kept_bytes": sum(t.numel() * t.element_size() for t in KEPT),
                      "allocated": torch.cuda.memory_allocated(), "oom_at": oom_at,
                      "oom_bytes": OOM_BYTES if refused else None}), flush=True)
    vramtrace.mark("done")


if __name__ == "__main__":
    main()
