"""Three gloo ranks; rank 1 fails on the GPU, the others wait in an all-reduce and follow."""

import datetime
import os
import time

import torch
import torch.distributed as dist

from common import versions

versions()
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=15))
rank = dist.get_rank()
torch.cuda.set_device(0)
model = torch.nn.Linear(1024, 1024).cuda()
if rank == 1:
    time.sleep(1)
    mode = os.environ.get("FAIL_MODE", "mismatch")
    if mode == "oom":
        huge = torch.empty(400 * 2**30, dtype=torch.uint8, device="cuda")
    batch = torch.randn(8, 1024)  # left on the CPU
    out = model(batch)
tensor = torch.ones(4)
dist.all_reduce(tensor)
dist.all_reduce(tensor)
print("rank", rank, "done")
dist.destroy_process_group()
