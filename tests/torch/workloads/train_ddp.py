"""train_loop.py's MLP trained with DistributedDataParallel over the gloo backend, as torchrun
starts it (one process per rank, every rank on cuda:0 of the one simulated GPU), with no
vramtrace marker; with --leak-rank R, rank R alone keeps a 2 MiB tensor per step in a list.

DDP is built with gradient_as_bucket_view=True, so each gradient is a view of the reducer's
flat buckets (the tensors gradients are all-reduced in), and the gradients' blocks are the
buckets. After the loop each rank marks "trained" and prints one JSON line with its rank, its
pid and train_loop.trained_truth()'s block bytes by what holds them.

Usage: torchrun --standalone --nproc_per_node 2 train_ddp.py [--steps N] [--leak-rank R]"""

import argparse
import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from train_loop import BATCH, FEATURES, LEAK_ELEMENTS, MLP, trained_truth

parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--steps", type=int, default=8)
parser.add_argument("--leak-rank", type=int, default=-1)
args = parser.parse_args()

dist.init_process_group("gloo")
rank = dist.get_rank()
torch.cuda.set_device(0)
torch.manual_seed(0)
model = MLP().cuda()
ddp = DistributedDataParallel(model, device_ids=[0], gradient_as_bucket_view=True)
optimizer = torch.optim.Adam(ddp.parameters(), lr=1e-3)
kept = []
for step in range(args.steps):
    batch = torch.randn(BATCH, FEATURES, device="cuda")
    target = torch.randn(BATCH, FEATURES, device="cuda")
    output = ddp(batch)
    loss = nn.functional.mse_loss(output, target)
    if rank == args.leak_rank:
        kept.append(torch.randn(LEAK_ELEMENTS, device="cuda"))  # PLANT: rank
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=False)

truth = trained_truth(model, optimizer, kept, [batch, target, output, loss])
truth.update(rank=rank, world_size=dist.get_world_size(), steps=args.steps, pid=os.getpid())
for turn in range(dist.get_world_size()):  # one rank at a time: the lines never interleave
    if turn == rank:
        print(json.dumps(truth), flush=True)
    dist.barrier()
time.sleep(0.1)  # the autograd thread lets go of its graph first (tests/torch/README.md)
dist.destroy_process_group()
