"""A forward and backward pass and an Adam step on an elementwise model (no cuBLAS needed),
marked "before backward", "after backward" and "after step". The last line is one JSON
object: torch.cuda.memory_stats()'s "allocation.all.allocated" (every block the allocator
handed out since the start) and the parameters' count and bytes."""

import json
import time

import torch

import vramtrace


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.randn(256, 1024))
        self.shift = torch.nn.Parameter(torch.zeros(256, 1024))
        self.gate = torch.nn.Parameter(torch.ones(1024))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x * self.scale + self.shift) * self.gate


def main() -> None:
    torch.manual_seed(0)
    model = Model().cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    batch = torch.randn(8, 256, 1024, device="cuda")
    loss = (model(batch) ** 2).mean()
    torch.cuda.synchronize()
    vramtrace.mark("before backward")
    loss.backward()  # on the autograd engine's device thread
    torch.cuda.synchronize()
    vramtrace.mark("after backward")
    optimizer.step()  # exp_avg and exp_avg_sq per parameter, made at the first step
    torch.cuda.synchronize()
    vramtrace.mark("after step")
    stats = torch.cuda.memory_stats()
    parameters = list(model.parameters())
    print(json.dumps({
        "allocations": stats["allocation.all.allocated"],
        "frees": stats["allocation.all.freed"],
        "allocated": torch.cuda.memory_allocated(),
        "parameters": len(parameters),
        "parameter_bytes": sum(p.numel() * p.element_size() for p in parameters),
        "state_tensors": sum(len([v for v in s.values() if torch.is_tensor(v) and v.is_cuda])
                             for s in optimizer.state.values()),
    }), flush=True)
    # Let the autograd engine's thread drop its graph task before the interpreter finalizes
    # (else torch may abort at exit: tests/torch/README.md).
    time.sleep(0.1)


if __name__ == "__main__":
    main()
