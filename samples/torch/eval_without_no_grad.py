"""An evaluation loop that forgets torch.no_grad(), for `vramtrace run` on a real or the simulated GPU.

Outputs are collected for a metric; without no_grad each output keeps the autograd graph of
its batch alive (the activations saved for a backward pass that never comes), so memory grows
by a batch's activations per step, far more than the outputs themselves. `--no-grad` runs the
same loop correctly. Each step is marked ("eval N") and prints PyTorch's counters, as
train_leak.py does, so the two runs' growth can be compared:

    python eval_without_no_grad.py            # grows
    python eval_without_no_grad.py --no-grad  # flat

The layers are elementwise (a scale and a shift per feature, then a GELU), which keeps the
activations the only thing that grows."""

import argparse
import contextlib
import json

import torch

import vramtrace


class ScaleShift(torch.nn.Module):
    """x * weight + bias, per feature."""

    def __init__(self, features: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(features))
        self.bias = torch.nn.Parameter(torch.zeros(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight + self.bias


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--no-grad", action="store_true", help="wrap the loop in torch.no_grad()")
    args = parser.parse_args()

    torch.manual_seed(0)
    device = torch.device("cuda")
    model = torch.nn.Sequential(*[
        layer for _ in range(4) for layer in (ScaleShift(2048), torch.nn.GELU())
    ]).to(device)
    model.eval()
    outputs = []
    guard = torch.no_grad() if args.no_grad else contextlib.nullcontext()
    with guard:
        for step in range(args.steps):
            batch = torch.randn(512, 2048, device=device)
            outputs.append(model(batch).sum(dim=1))  # a small tensor, but it holds the graph
            torch.cuda.synchronize()
            name = f"eval {step}"
            vramtrace.mark(name)
            print(json.dumps({
                "marker": name,
                "allocated": torch.cuda.memory_allocated(),
                "reserved": torch.cuda.memory_reserved(),
            }), flush=True)


if __name__ == "__main__":
    main()
