"""Two ranks on one GPU: torchrun without torch.cuda.set_device (CUL101) -> NCCL duplicate GPU."""

import datetime

import torch
import torch.distributed as dist

from common import versions

versions()
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=30))
model = torch.nn.Linear(16, 16).cuda()
grad = torch.ones(16, device="cuda")
dist.all_reduce(grad)
print("all-reduce done", grad[0].item())
dist.destroy_process_group()
