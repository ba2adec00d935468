"""A training loop that doubles its batch until the GPU runs out (run it with simgpu --memory
768MiB), as a batch-size search does: an MLP with Adam, the batch made on the device, and the
torch.OutOfMemoryError left uncaught, so that the process dies of it as a script does. Its
traceback (stderr) is the truth: the line that raised, and torch's own numbers."""

import torch
from torch import nn

model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 4096), nn.ReLU(),
                      nn.Linear(4096, 1024)).cuda()
optimizer = torch.optim.Adam(model.parameters())
for batch in [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]:
    inputs = torch.randn(batch, 1024, device="cuda")
    loss = model(inputs).square().mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    print(f"batch {batch}: allocated {torch.cuda.memory_allocated()}", flush=True)
