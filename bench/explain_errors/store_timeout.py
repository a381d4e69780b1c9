"""A world of two in which only one rank starts: the store times out waiting for the other."""

import datetime
import os

import torch.distributed as dist

from common import versions

versions()
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("gloo", rank=0, world_size=2, timeout=datetime.timedelta(seconds=6))
