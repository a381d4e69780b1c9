"""A model on the GPU and its batch on the CPU, in the shapes people write."""

import sys
import traceback

import torch

from common import versions

versions()
device = torch.device("cuda")
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
model.to(device)


def step(batch):
    return model(batch)


def embed():
    table = torch.nn.Embedding(100, 8).to(device)
    ids = torch.tensor([1, 2, 3])
    return table(ids)


def concat():
    return torch.cat([torch.zeros(2, device=device), torch.zeros(2)])


def loss():
    logits = model(torch.randn(4, 32, device=device))
    target = torch.tensor([0, 1, 2, 3])
    return torch.nn.functional.cross_entropy(logits, target)


def conv():
    net = torch.nn.Conv2d(3, 8, 3).to(device)
    return net(torch.randn(1, 3, 16, 16))


case = sys.argv[1] if len(sys.argv) > 1 else "linear"
if case == "linear":
    batch = torch.randn(4, 32)  # never moved to the GPU
    step(batch)
else:
    {"embed": embed, "concat": concat, "loss": loss, "conv": conv}[case]()
