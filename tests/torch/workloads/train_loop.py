"""A training loop as people write it, at the top level of a script, with no vramtrace marker
in the loop: a small MLP (Linear, GELU, LayerNorm) trained for a few steps, its parameters made
one of the ways people make them, with one of the optimizers people use, and optionally one of
the leaks people plant without meaning to.

  --params   cuda (.cuda()), to (.to(device)), device_arg (device= to each layer),
             device_context (built inside `with torch.device("cuda")`), randn (bare tensors:
             torch.randn(..., device="cuda", requires_grad=True)), meta (built on the meta
             device, then to_empty() and initialised), state_dict (.cuda(), then
             load_state_dict of a CPU copy)
  --optimizer  adam, adamw, sgd (with momentum), adam_foreach, adam_fused
  --variant  fp32; bf16_autocast (forward under torch.autocast); checkpoint (the model under
             torch.utils.checkpoint); accumulate (two micro-batches a step, gradients
             accumulated); eval and eval_no_grad (three evaluation batches after training,
             without and with torch.no_grad)
  --leak     none; list (a tensor of each step kept in a list); total_loss (a running metric
             summed with its autograd history, `total_loss += l1_loss(...)`: each step's graph
             and the tensor it saved stay); cache (a dict of outputs keyed by step)

After the loop, once the GPU is idle, the script marks "trained" and prints one JSON line with
the truth then, from its own objects and torch.cuda.memory_snapshot(): the block bytes of the
parameters and buffers, of their gradients, of the optimizer's state, of what the leak kept
(list and cache), of the last step's batch, target, output and loss, and memory_allocated().
The model, the optimizer and the leak stay referenced (globals) until the interpreter ends, as
in any script."""

import argparse
import contextlib
import json
import os
import time

import torch
from torch import nn

import vramtrace

FEATURES, HIDDEN, BATCH = 256, 1024, 2048
LEAK_ELEMENTS = 512 * 1024  # 2 MiB of float32 kept per step by the list leak


class MLP(nn.Module):
    def __init__(self, device=None) -> None:
        super().__init__()
        self.up = nn.Linear(FEATURES, HIDDEN, device=device)
        self.down = nn.Linear(HIDDEN, FEATURES, device=device)
        self.norm = nn.LayerNorm(FEATURES, device=device)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.down(nn.functional.gelu(self.up(x))))


class BareMLP:
    """The same layers as bare tensors, as a hand-written model keeps them."""

    def __init__(self) -> None:
        def weight(*shape):
            return torch.randn(*shape, device="cuda", requires_grad=True)
        self.up_w, self.up_b = weight(HIDDEN, FEATURES), weight(HIDDEN)
        self.down_w, self.down_b = weight(FEATURES, HIDDEN), weight(FEATURES)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        hidden = nn.functional.gelu(x @ self.up_w.t() + self.up_b)
        return hidden @ self.down_w.t() + self.down_b

    def parameters(self):
        return [self.up_w, self.up_b, self.down_w, self.down_b]

    def buffers(self):
        return []


def make_model(how: str):
    cuda = torch.device("cuda")
    if how == "cuda":
        return MLP().cuda()
    if how == "to":
        return MLP().to(cuda)
    if how == "device_arg":
        return MLP(device=cuda)
    if how == "device_context":
        with cuda:
            return MLP()
    if how == "randn":
        return BareMLP()
    if how == "meta":
        with torch.device("meta"):
            model = MLP()
        model = model.to_empty(device=cuda)
        for module in model.modules():
            if hasattr(module, "reset_parameters"):
                module.reset_parameters()
        return model
    if how == "state_dict":
        saved = MLP().state_dict()
        model = MLP().cuda()
        model.load_state_dict(saved)
        return model
    raise ValueError(how)


def make_optimizer(name: str, parameters):
    if name == "adam":
        return torch.optim.Adam(parameters, lr=1e-3)
    if name == "adamw":
        return torch.optim.AdamW(parameters, lr=1e-3)
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=1e-2, momentum=0.9)
    if name == "adam_foreach":
        return torch.optim.Adam(parameters, lr=1e-3, foreach=True)
    if name == "adam_fused":
        return torch.optim.Adam(parameters, lr=1e-3, fused=True)
    raise ValueError(name)


def block_sizes() -> dict:
    """The allocator's live blocks, address -> size, as torch.cuda.memory_snapshot() has them;
    empty where torch hands each tensor to the driver (backend:cudaMallocAsync,
    PYTORCH_NO_CUDA_MEMORY_CACHING=1), whose allocations are the tensors' own bytes."""
    if (torch.cuda.get_allocator_backend() != "native"
            or os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1"):
        return {}
    blocks = {}
    for segment in torch.cuda.memory_snapshot():
        for block in segment["blocks"]:
            if block["state"] == "active_allocated":
                blocks[block["address"]] = block["size"]
    return blocks


def bytes_of(tensors, blocks: dict, seen: set) -> int:
    """The block bytes of the tensors' storages (their own bytes where there are no blocks),
    each storage counted once across calls."""
    total = 0
    for tensor in tensors:
        if tensor is None or not tensor.is_cuda:
            continue
        storage = tensor.untyped_storage()
        address = storage.data_ptr()
        if address in seen or (blocks and address not in blocks):
            continue
        seen.add(address)
        total += blocks[address] if blocks else storage.nbytes()
    return total


def trained_truth(model, optimizer, kept, last_step) -> dict:
    """Marks "trained" once the GPU is idle, and returns the block bytes then of the model's
    parameters and buffers, their gradients, the optimizer's state, the tensors `kept` (a leak)
    and `last_step`, each block counted once, and memory_allocated() (null without caching,
    where torch counts nothing)."""
    torch.cuda.synchronize()
    vramtrace.mark("trained")
    blocks = block_sizes()
    seen = set()
    return {
        "parameter": bytes_of(list(model.parameters()) + list(model.buffers()), blocks, seen),
        "gradient": bytes_of([p.grad for p in model.parameters()], blocks, seen),
        "optimizer_state": bytes_of(
            [t for state in optimizer.state.values() for t in state.values()
             if isinstance(t, torch.Tensor)], blocks, seen),
        "leak": bytes_of(kept, blocks, seen),
        "last_step": bytes_of(last_step, blocks, seen),
        # Without caching torch counts nothing: null.
        "allocated": (None if os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1"
                      else torch.cuda.memory_allocated()),
        "max_allocated": torch.cuda.max_memory_allocated(),
    }


if __name__ == "__main__":  # the script at the top level: its names are globals
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", default="cuda")
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--leak", default="none", choices=("none", "list", "total_loss", "cache"))
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--variant", default="fp32",
                        choices=("fp32", "bf16_autocast", "checkpoint", "accumulate", "eval",
                                 "eval_no_grad"))
    args = parser.parse_args()

    torch.manual_seed(0)
    model = make_model(args.params)
    optimizer = make_optimizer(args.optimizer, model.parameters())
    kept = []
    cache = {}
    total_loss = torch.zeros((), device="cuda")
    micro_batches = 2 if args.variant == "accumulate" else 1

    def forward(batch: torch.Tensor) -> torch.Tensor:
        if args.variant == "bf16_autocast":
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return model(batch).float()
        if args.variant == "checkpoint":
            return torch.utils.checkpoint.checkpoint(model, batch, use_reentrant=False)
        return model(batch)

    for step in range(args.steps):
        for micro_batch in range(micro_batches):
            batch = torch.randn(BATCH // micro_batches, FEATURES, device="cuda")
            target = torch.randn(BATCH // micro_batches, FEATURES, device="cuda")
            output = forward(batch)
            loss = nn.functional.mse_loss(output, target) / micro_batches
            if args.leak == "list":
                kept.append(torch.randn(LEAK_ELEMENTS, device="cuda"))  # PLANT: list
            elif args.leak == "total_loss":
                total_loss += nn.functional.l1_loss(output, target)  # PLANT: total_loss
            elif args.leak == "cache":
                cache[step] = output.detach().clone()  # PLANT: cache
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
    if args.variant.startswith("eval"):  # an evaluation after training, as people write it
        model.eval()
        with torch.no_grad() if args.variant == "eval_no_grad" else contextlib.nullcontext():
            for _ in range(3):
                batch = torch.randn(BATCH, FEATURES, device="cuda")
                output = model(batch)
                loss = nn.functional.mse_loss(output, target)

    truth = trained_truth(model, optimizer, kept + list(cache.values()),
                          [batch, target, output, loss, total_loss])
    truth["steps"] = args.steps
    print(json.dumps(truth), flush=True)
    time.sleep(0.1)  # the autograd thread lets go of its graph first (tests/torch/README.md)
