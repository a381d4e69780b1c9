"""Another process holds the GPU. `hog` fills it and waits; the victims then fail:
`context` creates its CUDA context only now (no figures in the message), `conv` does the same
with a convolution as its first GPU operation, and `late` created its context before the hog
filled the GPU and then allocates (figures naming the other process)."""

import os
import sys
import time

import torch

from common import versions

case = sys.argv[1]
ready = "/tmp/explain_hog_ready"
if case == "hog":
    blocks = []
    chunk = 256 * 2**20
    while True:
        try:
            blocks.append(torch.empty(chunk, dtype=torch.uint8, device="cuda"))
        except torch.OutOfMemoryError:
            if chunk <= 2**20:
                break
            chunk //= 2
    free, total = torch.cuda.mem_get_info()
    print(f"hog holds {torch.cuda.memory_allocated() / 2**30:.2f} GiB, {free / 2**20:.0f} MiB free", file=sys.stderr)
    open(ready, "w").close()
    time.sleep(float(sys.argv[2]))
    sys.exit(0)
if case == "late":
    versions()
    torch.zeros(1, device="cuda")  # context first
    while not os.path.exists(ready):
        time.sleep(0.2)
    batch = torch.empty(4 * 2**30, dtype=torch.uint8, device="cuda")
    sys.exit(0)
while not os.path.exists(ready):
    time.sleep(0.2)
versions()
if case == "context":
    x = torch.randn(64, 64).to("cuda")
elif case == "conv":
    net = torch.nn.Conv2d(3, 16, 3)
    net.cuda()
    print(net(torch.randn(1, 3, 32, 32, device="cuda")).sum())
