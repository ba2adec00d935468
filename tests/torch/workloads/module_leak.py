"""Leaks the outputs of two modules' forward passes into a list: a user module's
(Residual.forward) and torch's own nn.LayerNorm, whose forward is Python in
torch/nn/modules/normalization.py calling torch/nn/functional.py. The kept tensors are the
leaks whose stacks the test reads, live at the mark "done" (Python's teardown frees them
after it)."""

import json
import os

import torch

import vramtrace

KEPT = []


class Residual(torch.nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + x * self.weight  # PLANT: residual output


def collect(model: torch.nn.Module, norm: torch.nn.Module, x: torch.Tensor) -> None:
    KEPT.append(model(x))  # PLANT: kept module output
    KEPT.append(norm(x))  # PLANT: kept norm output


def main() -> None:
    x = torch.empty(64, 4096, device="cuda")
    model = Residual(4096).cuda()
    norm = torch.nn.LayerNorm(4096).cuda()
    with torch.no_grad():
        collect(model, norm, x)
    torch.cuda.synchronize()
    vramtrace.mark("done")
    print(json.dumps({"pid": os.getpid(), "kept": len(KEPT)}), flush=True)


if __name__ == "__main__":
    main()
