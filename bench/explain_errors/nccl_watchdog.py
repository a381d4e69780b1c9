"""One NCCL rank whose all-reduce waits behind a long kernel: the watchdog times it out."""

import datetime
import os

import torch
import torch.distributed as dist

from common import versions

versions()
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=5), device_id=torch.device("cuda", local_rank))
grad = torch.ones(1024, device="cuda")
dist.all_reduce(grad)
torch.cuda.synchronize()
torch.cuda._sleep(2_000_000_000_00)  # about 100 s of GPU spinning ahead of the collective
dist.all_reduce(grad)
torch.cuda.synchronize()
print("never reached")
