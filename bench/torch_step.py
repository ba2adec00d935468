"""A dispatch-bound PyTorch training step, for bench/vs-torch-history.sh.

Each step runs a small elementwise model forward and backward and takes an Adam step: every
operator allocates and frees blocks through PyTorch's caching allocator, and on the simulated
GPU kernels cost nothing, so the step is all dispatch and allocator traffic: the worst case for
any recorder of allocations.

    python torch_step.py [--steps N] [--layers L] [--width W] [--history none|python|all]

--history records the run with PyTorch's own torch.cuda.memory._record_memory_history(
stacks=...) ("python": Python frames; "all": Python, TorchScript and C++ frames), as its users
would. Prints one JSON line: {"steps": N, "loop_seconds": X, "blocks": N} (blocks: the
allocator's count of block allocations in the loop)."""

import argparse
import json
import time

import torch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--layers", type=int, default=16)
    parser.add_argument("--width", type=int, default=4096)
    parser.add_argument("--history", choices=["none", "python", "all"], default="none")
    args = parser.parse_args()

    device = torch.device("cuda")
    if args.history != "none":
        torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks=args.history)
    weights = [torch.zeros(args.width, device=device, requires_grad=True)
               for _ in range(args.layers)]
    biases = [torch.zeros(args.width, device=device, requires_grad=True)
              for _ in range(args.layers)]
    optimizer = torch.optim.Adam(weights + biases, lr=1e-3)
    batch = torch.zeros(32, args.width, device=device)

    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    started = time.perf_counter()
    for _ in range(args.steps):
        x = batch
        for w, b in zip(weights, biases):
            x = torch.relu(x * w + b)
        loss = (x * x).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    torch.cuda.synchronize()
    elapsed = time.perf_counter() - started
    blocks = torch.cuda.memory_stats()["allocation.all.allocated"] - before
    if args.history != "none":
        torch.cuda.memory._record_memory_history(enabled=None)
    print(json.dumps({"steps": args.steps, "loop_seconds": elapsed, "blocks": blocks}), flush=True)
    # Let the autograd engine's thread drop its last graph task before the interpreter
    # finalizes (tests/torch/README.md: torch may abort at exit otherwise).
    time.sleep(0.1)


if __name__ == "__main__":
    main()
