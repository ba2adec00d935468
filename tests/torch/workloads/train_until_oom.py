"""A training loop that doubles its batch until the GPU runs out (run it with simgpu --memory
768MiB), as a batch-size search does: an MLP with Adam, the batch made on the device, and the
torch.OutOfMemoryError left uncaught, so that the process dies of it as a script does. Its
traceback (stderr) is the truth for the line that raised and torch's own numbers; a JSON line
after each step, for the blocks of its parameters and optimizer state. Memory grows
each iteration, and nothing is kept: `inputs` names one tensor at a time."""

import json

import torch
from torch import nn

from train_loop import block_sizes, bytes_of

model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                      nn.Linear(4096, 1024)).cuda()
optimizer = torch.optim.Adam(model.parameters())
for batch in [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]:
    inputs = torch.randn(batch, 1024, device="cuda")  # PLANT: batch
    loss = model(inputs).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    # The truth the OOM is checked against: the blocks of the model's parameters and of Adam's
    # state, which stay as they are until the error.
    blocks = block_sizes()
    print(json.dumps({"batch": batch,
                      "parameter": bytes_of(list(model.parameters()), blocks, set()),
                      "optimizer_state": bytes_of(
                          [t for state in optimizer.state.values() for t in state.values()
                           if isinstance(t, torch.Tensor)], blocks, set())}), flush=True)
