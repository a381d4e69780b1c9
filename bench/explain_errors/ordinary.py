"""Errors of training scripts that are not GPU errors, run on the GPU machine: explain must
match none of them."""

import sys

import torch

from common import versions

versions()
case = sys.argv[1]
if case == "shapes":
    torch.nn.Linear(32, 8).cuda()(torch.randn(4, 16, device="cuda"))
elif case == "cpu-oom":
    torch.empty(2**50, dtype=torch.uint8)
elif case == "dtype":
    torch.nn.Linear(8, 8).cuda()(torch.randn(2, 8, device="cuda", dtype=torch.float64))
elif case == "index":
    torch.zeros(3, device="cuda").view(4, 4)
elif case == "keyerror":
    state = torch.nn.Linear(4, 4).cuda().state_dict()
    print(state["module.weight"])
elif case == "backward-twice":
    x = torch.randn(4, requires_grad=True, device="cuda")
    y = (x * x).sum()
    y.backward()
    y.backward()
elif case == "no-grad":
    torch.randn(4, device="cuda").sum().backward()
