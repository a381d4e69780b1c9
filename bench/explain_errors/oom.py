"""Out-of-memory errors of the caching allocator: a capped process, fragmentation, and a single
request larger than the GPU."""

import sys

import torch

from common import versions

versions()
case = sys.argv[1]
GIB = 2**30
if case == "fraction":
    torch.cuda.set_per_process_memory_fraction(0.1)
    weights = torch.empty(10 * GIB, dtype=torch.uint8, device="cuda")
    activations = torch.empty(6 * GIB, dtype=torch.uint8, device="cuda")
elif case == "fragmentation":
    # Fill the GPU with 1 GiB segments, free them, then take 600 MiB from each: every segment
    # keeps a 424 MiB hole, and a 800 MiB request fits none of them.
    blocks = []
    try:
        while True:
            blocks.append(torch.empty(GIB, dtype=torch.uint8, device="cuda"))
    except torch.OutOfMemoryError:
        pass
    count = len(blocks)
    blocks.clear()
    kept = [torch.empty(600 * 2**20, dtype=torch.uint8, device="cuda") for _ in range(count)]
    print(f"{count} segments, {torch.cuda.memory_reserved() / GIB:.2f} GiB reserved", file=sys.stderr)
    big = torch.empty(800 * 2**20, dtype=torch.uint8, device="cuda")
elif case == "too-large":
    activations = torch.empty(300 * GIB, dtype=torch.uint8, device="cuda")
else:
    raise SystemExit(f"unknown case {case}")
