"""A PyTorch training loop with a planted leak, for `vramtrace run` on a real or the simulated GPU.

Each step keeps its output in a list (`history.append(out)`), the classic mistake of logging
a tensor instead of `.item()`: the outputs grow by one batch per step. After each step, once
the GPU is idle, it marks the trace ("step N") and prints one JSON line with PyTorch's own
counters at that moment, so that samples/torch/compare_with_torch.py can check the trace
against them:

    {"marker": "step 3", "allocated": N, "reserved": N, "max_allocated": N, "step_seconds": X}

The model is elementwise (a scale and a shift per feature, twice, with a ReLU between): a
forward pass, a backward pass and AdamW's step with the caching allocator's real traffic and
nothing else, so that the numbers are easy to follow.

Usage: python train_leak.py [--steps N]; markers are no-ops when not run under vramtrace."""

import argparse
import json
import time

import torch

import vramtrace


class ScaleShift(torch.nn.Module):
    """x * weight + bias, weight and bias of one sample's shape (broadcast over the batch)."""

    def __init__(self, shape) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(*shape))
        self.bias = torch.nn.Parameter(torch.zeros(*shape))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight + self.bias


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device("cuda")
    shape = (512, 1024)  # 2 MiB of float32 per parameter
    model = torch.nn.Sequential(ScaleShift(shape), torch.nn.ReLU(), ScaleShift(shape)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    history = []
    for step in range(args.steps):
        started = time.perf_counter()
        batch = torch.randn(4, *shape, device=device)
        target = torch.randn(4, *shape, device=device)
        out = model(batch)
        loss = torch.nn.functional.mse_loss(out, target)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        history.append(out.detach())  # the planted leak: one (4, 512, 1024) float tensor per step
        torch.cuda.synchronize()
        elapsed = time.perf_counter() - started
        name = f"step {step}"
        vramtrace.mark(name)
        print(json.dumps({
            "marker": name,
            "allocated": torch.cuda.memory_allocated(),
            "reserved": torch.cuda.memory_reserved(),
            "max_allocated": torch.cuda.max_memory_allocated(),
            "step_seconds": elapsed,
        }), flush=True)
    # The autograd engine's thread lets go of the last backward's graph task a moment after
    # backward returns; if the interpreter is finalizing by then, it aborts ("terminate called
    # without an active exception": tests/torch/README.md). That moment is given here.
    time.sleep(0.1)


if __name__ == "__main__":
    main()
