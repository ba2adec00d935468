"""Models people train, for a few steps each: GPT-2 and a Llama-style decoder from transformers
(built from small configs, nothing downloaded), and a ResNet-18 (torchvision's architecture,
written out here: no torchvision wheel matches the pinned torch). After each training step,
once the GPU is idle, a mark "step N" and one JSON line with torch's counters then,

    {"marker": "step N", "allocated": N, "reserved": N, "max_allocated": N}

so that samples/torch/compare_with_torch.py can hold the trace against them. After the last
step, a mark "trained" and a line with the block bytes of the model's parameters and buffers,
their gradients and the optimizer's state then (train_loop.trained_truth()).

Usage: python train_models.py {gpt2,llama,resnet18} [--steps N]; markers are no-ops when not
run under vramtrace."""

import argparse
import json
import time

import torch
from torch import nn

import vramtrace
from train_loop import trained_truth


class BasicBlock(nn.Module):
    def __init__(self, inputs: int, outputs: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or inputs != outputs:
            self.downsample = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False),
                                            nn.BatchNorm2d(outputs))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class ResNet18(nn.Module):
    """torchvision.models.resnet18's layers: 11.7 M parameters for 1000 classes."""

    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers = []
        inputs = 64
        for outputs, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers.append(nn.Sequential(BasicBlock(inputs, outputs, stride),
                                        BasicBlock(outputs, outputs, 1)))
            inputs = outputs
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def language_model(name: str) -> nn.Module:
    import transformers
    if name == "gpt2":
        config = transformers.GPT2Config(vocab_size=1000, n_positions=128, n_embd=128, n_layer=2,
                                         n_head=4)
        return transformers.GPT2LMHeadModel(config)
    config = transformers.LlamaConfig(vocab_size=1000, hidden_size=128, intermediate_size=344,
                                      num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=128)
    return transformers.LlamaForCausalLM(config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=("gpt2", "llama", "resnet18"))
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()

    torch.manual_seed(0)
    cuda = torch.device("cuda")
    if args.model == "resnet18":
        model = ResNet18().to(cuda)
        images = torch.randn(8, 3, 64, 64, device=cuda)
        labels = torch.randint(0, 1000, (8,), device=cuda)

        def loss_of_batch() -> torch.Tensor:
            return nn.functional.cross_entropy(model(images), labels)
    else:
        model = language_model(args.model).to(cuda)
        tokens = torch.randint(0, 1000, (4, 64), device=cuda)

        def loss_of_batch() -> torch.Tensor:
            return model(input_ids=tokens, labels=tokens).loss

    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for step in range(args.steps):
        loss = loss_of_batch()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        name = f"step {step}"
        vramtrace.mark(name)
        print(json.dumps({"marker": name, "allocated": torch.cuda.memory_allocated(),
                          "reserved": torch.cuda.memory_reserved(),
                          "max_allocated": torch.cuda.max_memory_allocated()}), flush=True)
    # What holds the memory once trained, from the script's own objects: a last line
    # {"marker": "trained", "parameter": N, "gradient": N, "optimizer_state": N, ...}.
    truth = trained_truth(model, optimizer, [], [])
    print(json.dumps({"marker": "trained", **truth}), flush=True)
    time.sleep(0.1)  # the autograd thread lets go of its graph first (tests/torch/README.md)


if __name__ == "__main__":
    main()
