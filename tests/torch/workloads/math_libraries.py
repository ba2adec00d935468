"""The operations that run on NVIDIA's math libraries (cuBLAS, cuBLASLt, cuDNN), one after the
other, each marked in the trace: after each, once the GPU is idle, a mark with the
operation's name and one JSON line with torch's counters at that moment (a CUDA graph:
after its capture, and after each replay),

    {"marker": NAME, "allocated": N, "reserved": N, "max_allocated": N}

so that samples/torch/compare_with_torch.py can hold the trace against them. Every operation
runs its backward pass where it has one. The outputs are kept until the end, so that memory
grows from mark to mark. A last line {"failed": [NAME, ...]} names the operations that raised.

Usage: python math_libraries.py; markers are no-ops when not run under vramtrace."""

import json
import time

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch.nn.attention import SDPBackend, sdpa_kernel

import vramtrace


def main() -> None:
    torch.manual_seed(0)
    cuda = torch.device("cuda")
    kept = []
    failed = []

    def run(name, operation):
        try:
            kept.append(operation())
        except Exception as error:  # reported below, and the run goes on
            failed.append(name)
            print(f"{name}: {error}", flush=True)
            return
        torch.cuda.synchronize()
        vramtrace.mark(name)
        print(json.dumps({"marker": name, "allocated": torch.cuda.memory_allocated(),
                          "reserved": torch.cuda.memory_reserved(),
                          "max_allocated": torch.cuda.max_memory_allocated()}), flush=True)

    def with_backward(output, *inputs):
        output.float().sum().backward()
        return [output] + [x.grad for x in inputs if x.grad is not None]

    def leaf(*shape, dtype=torch.float32):
        return torch.randn(*shape, device=cuda, dtype=dtype, requires_grad=True)

    linear = torch.nn.Linear(256, 512).to(cuda)
    x = leaf(64, 256)
    run("linear", lambda: with_backward(linear(x), x))
    a, b = leaf(128, 256), leaf(256, 64)
    run("matmul", lambda: with_backward(a @ b, a, b))
    batch_a, batch_b = leaf(4, 32, 64), leaf(4, 64, 16)
    run("bmm", lambda: with_backward(torch.bmm(batch_a, batch_b), batch_a, batch_b))
    bias = leaf(128, 64)
    run("addmm", lambda: with_backward(torch.addmm(bias, a, b), bias, a, b))
    base = leaf(4, 32, 16)
    run("baddbmm", lambda: with_backward(torch.baddbmm(base, batch_a, batch_b), base))

    conv = torch.nn.Conv2d(3, 16, 3, padding=1).to(cuda)
    images = leaf(8, 3, 32, 32)
    run("conv2d", lambda: with_backward(conv(images), images))
    norm = torch.nn.BatchNorm2d(3).to(cuda)
    run("batchnorm2d", lambda: with_backward(norm(images), images))
    layer_norm = torch.nn.LayerNorm(256).to(cuda)
    run("layernorm", lambda: with_backward(layer_norm(x), x))
    labels = torch.randint(0, 512, (64,), device=cuda)
    run("cross_entropy", lambda: with_backward(F.cross_entropy(linear(x), labels), x))

    for backend in (SDPBackend.MATH, SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION,
                    SDPBackend.CUDNN_ATTENTION):
        q = leaf(2, 4, 64, 32, dtype=torch.float16)

        def attention(q=q, backend=backend):
            with sdpa_kernel(backend):
                return with_backward(F.scaled_dot_product_attention(q, q, q, is_causal=True), q)

        run(f"sdpa {backend.name.lower()}", attention)

    for dtype in (torch.bfloat16, torch.float16):
        def autocast(dtype=dtype):
            with torch.autocast("cuda", dtype=dtype):
                out = linear(x)
            return with_backward(out, x)

        run(f"autocast {str(dtype).split('.')[-1]}", autocast)

    scaler = torch.amp.GradScaler()
    optimizer = torch.optim.AdamW(linear.parameters())

    def scaled_step():
        with torch.autocast("cuda", dtype=torch.float16):
            loss = linear(x).float().sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        return loss

    run("grad_scaler step", scaled_step)
    block = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU(),
                                torch.nn.Linear(256, 256)).to(cuda)
    run("checkpoint", lambda: with_backward(
        torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False), x))

    # A CUDA graph of a forward pass: captured into its private memory pool on a side stream,
    # then replayed, as torch.cuda.graphs does it.
    graph = torch.cuda.CUDAGraph()
    static_input = torch.randn(64, 256, device=cuda)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):  # warm up outside the capture, as torch asks
            block(static_input)
    torch.cuda.current_stream().wait_stream(side)

    def capture():
        with torch.cuda.graph(graph):
            return block(static_input)

    run("cuda_graph capture", capture)
    for replay in range(2):
        def replay_graph():
            static_input.copy_(torch.randn(64, 256, device=cuda))
            graph.replay()

        run(f"cuda_graph replay {replay}", replay_graph)
    graphed = torch.cuda.make_graphed_callables(torch.nn.Linear(256, 256).to(cuda), (leaf(64, 256),))
    run("make_graphed_callables", lambda: with_backward(graphed(leaf(64, 256))))

    torch.cuda.synchronize()
    print(json.dumps({"failed": failed}), flush=True)
    time.sleep(0.1)  # the autograd thread lets go of its graph first (tests/torch/README.md)


if __name__ == "__main__":
    main()
