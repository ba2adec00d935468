"""A training step with parameters, a buffer, Adam and a backward pass (elementwise: no cuBLAS
on the simulated GPU), marked "before backward", "after backward" and "after step". The last
line is one JSON object: the parameters' bytes, the buffer's, torch.cuda.memory_allocated() at
each mark and max_memory_allocated(). With --memtracker the step runs inside PyTorch's own
MemTracker (torch.distributed._tools.mem_tracker), and the object also has its snapshot of
cuda:0 at each mark, by category."""

import json
import sys
import time

import torch

import vramtrace
from adam_backward import Model as ElementwiseModel

MARKS = ("before backward", "after backward", "after step")


class Model(ElementwiseModel):
    """adam_backward.py's model with a buffer that forward updates."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("seen", torch.zeros(1024))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.seen.add_(1)
        return super().forward(x)


def cuda_snapshot(tracker) -> dict:
    """MemTracker's current bytes on cuda:0, by its category names."""
    for device, categories in tracker.get_tracker_snapshot("current").items():
        if str(device).startswith("cuda"):
            return {str(getattr(k, "value", k)): v for k, v in categories.items()}
    return {}


def main() -> None:
    with_tracker = "--memtracker" in sys.argv
    torch.manual_seed(0)
    model = Model().cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    allocated, tracked = {}, {}
    context = None
    if with_tracker:
        from torch.distributed._tools.mem_tracker import MemTracker
        context = MemTracker()
        context.track_external(model, optimizer)
        context.__enter__()

    def mark(name: str) -> None:
        torch.cuda.synchronize()
        vramtrace.mark(name)
        allocated[name] = torch.cuda.memory_allocated()
        if context is not None:
            tracked[name] = cuda_snapshot(context)

    batch = torch.randn(8, 256, 1024, device="cuda")
    loss = (model(batch) ** 2).mean()
    mark(MARKS[0])
    loss.backward()  # on the autograd engine's device thread
    mark(MARKS[1])
    optimizer.step()  # exp_avg and exp_avg_sq per parameter, made at the first step
    mark(MARKS[2])
    if context is not None:
        context.__exit__(None, None, None)
    print(json.dumps({
        "parameter_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
        "buffer_bytes": sum(b.numel() * b.element_size() for b in model.buffers()),
        "allocated": allocated,
        "max_allocated": torch.cuda.max_memory_allocated(),
        "memtracker": tracked,
    }), flush=True)
    # Let the autograd engine's thread drop its graph task before the interpreter finalizes
    # (else torch may abort at exit: tests/torch/README.md).
    time.sleep(0.1)


if __name__ == "__main__":
    main()
