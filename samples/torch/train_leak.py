"""A PyTorch training loop with a planted leak, for `vramtrace run` on a real GPU.

Each step keeps its output in a list (`history.append(out)`), the classic mistake of logging
a tensor instead of `.item()`: the outputs, and the small activations they hold, grow by one
batch per step. After each step, once the GPU is idle, it marks the trace ("step N") and
prints one JSON line with PyTorch's own counters at that moment, so that
samples/torch/compare_with_torch.py can check the trace against them:

    {"marker": "step 3", "allocated": N, "reserved": N, "step_seconds": X}

Usage: python train_leak.py [--steps N]; markers are no-ops when not run under vramtrace."""

import argparse
import json
import time

import torch

import vramtrace


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device("cuda")
    model = torch.nn.Sequential(
        torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    history = []
    for step in range(args.steps):
        started = time.perf_counter()
        batch = torch.randn(256, 1024, device=device)
        target = torch.randn(256, 1024, device=device)
        out = model(batch)
        loss = torch.nn.functional.mse_loss(out, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        history.append(out.detach())  # the planted leak: one (256, 1024) float tensor per step
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - started
        name = f"step {step}"
        vramtrace.mark(name)
        print(json.dumps({
            "marker": name,
            "allocated": torch.cuda.memory_allocated(),
            "reserved": torch.cuda.memory_reserved(),
            "step_seconds": elapsed,
        }), flush=True)


if __name__ == "__main__":
    main()
