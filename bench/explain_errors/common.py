"""Shared by the error-producing scripts: print the versions a log was produced with."""

import datetime
import sys

import torch


def versions() -> None:
    nccl = ".".join(map(str, torch.cuda.nccl.version())) if torch.cuda.is_available() else "n/a"
    print(
        f"# torch {torch.__version__}, CUDA {torch.version.cuda}, NCCL {nccl}, "
        f"python {sys.version.split()[0]}, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d}",
        file=sys.stderr,
        flush=True,
    )
