"""Deterministic PyTorch training scripts for the language-server benchmark.

`training_script(lines)` builds one long script out of realistic blocks (data loading, models,
training loops, evaluation, checkpointing), some with the patterns culint reports, so that
every edit is linted with real findings around it.

`module_level_script(lines)` builds one written at module level, as notebooks exported to a
script and quick experiments are: steps spelled out as top-level assignments and calls between
a few top-level loops. Tree-sitter's incremental reparse does not share a top-level statement
that starts with a name (BENCHMARKS.md), so such a script shows what a keystroke costs when
nearly every statement is parsed and linted anew.
"""

import random
import sys

HEADER = '''"""Training entry point (generated for culint's latency benchmark)."""
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader

device = "cuda" if torch.cuda.is_available() else "cpu"

'''

BLOCKS = [
    '''
class Block{n}(nn.Module):
    def __init__(self, width={width}):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x):
        h = self.norm(x)
        h = F.gelu(self.up(h))
        return x + self.down(h)
''',
    '''
def train_epoch_{n}(model, loader, optimizer, scheduler):
    model.train()
    running = 0.0
    for step, (inputs, targets) in enumerate(loader):
        inputs, targets = inputs.to(device), targets.to(device)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            logits = model(inputs)
            loss = F.cross_entropy(logits, targets)
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        running += loss.item()
        if step % {every} == 0:
            print(f"step {{step}} loss {{running / (step + 1):.4f}}")
    return running
''',
    '''
def train_leaky_{n}(model, loader, optimizer):
    losses = []
    for batch in loader:
        out = model(batch["input_ids"].cuda())
        loss = out.loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        torch.cuda.empty_cache()
        losses.append(loss.item())
    return sum(losses) / max(len(losses), 1)
''',
    '''
@torch.no_grad()
def evaluate_{n}(model, loader):
    model.eval()
    correct = total = 0
    for inputs, targets in loader:
        logits = model(inputs.to(device))
        correct += (logits.argmax(-1) == targets.to(device)).sum().item()
        total += targets.numel()
    return correct / max(total, 1)
''',
    '''
def release_{n}(model, optimizer):
    torch.cuda.empty_cache()
    del model, optimizer
''',
    '''
def save_checkpoint_{n}(model, optimizer, path, epoch):
    state = {{
        "epoch": epoch,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
    }}
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def cosine_lr_{n}(step, warmup={warmup}, total=100_000, base=3e-4):
    if step < warmup:
        return base * step / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return base * 0.5 * (1.0 + math.cos(math.pi * progress))
''',
]


def assembled(header, block, lines: int, seed: int) -> str:
    """`header`, then the blocks that `block(rng, n)` makes for n = 0, 1, ..., cut to `lines`."""
    rng = random.Random(seed)
    parts = [header]
    count = header.count("\n")
    n = 0
    while count < lines:
        part = block(rng, n)
        parts.append(part)
        count += part.count("\n")
        n += 1
    text = "".join(parts)
    return "\n".join(text.split("\n")[:lines]) + "\n"


def training_script(lines: int, seed: int = 0) -> str:
    def block(rng, n):
        return rng.choice(BLOCKS).format(n=n, width=rng.choice([256, 512, 768]), every=rng.choice([50, 100]),
                                         warmup=rng.choice([500, 1000, 2000]))

    return assembled(HEADER, block, lines, seed)


MODULE_HEADER = '''"""Training run written at module level (generated for culint's latency benchmark)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

device = "cuda" if torch.cuda.is_available() else "cpu"
width = 512
model = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, 10)).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
targets = torch.randint(0, 10, (32,), device=device)

'''

MODULE_BLOCKS = [
    '''
inputs_{n} = torch.randn(32, width, device=device)
logits_{n} = model(inputs_{n})
loss_{n} = F.cross_entropy(logits_{n}, targets)
loss_{n}.backward()
optimizer.step()
optimizer.zero_grad(set_to_none=True)
print(f"step {n} loss {{loss_{n}.item():.4f}}")
''',
    '''
for step in range({steps}):
    batch = torch.randn(32, width, device=device)
    loss = F.cross_entropy(model(batch), targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    torch.cuda.empty_cache()
''',
    '''
model.eval()
with torch.no_grad():
    accuracy_{n} = (model(inputs_{previous}).argmax(-1) == targets).float().mean().item()
model.train()
print(f"accuracy {{accuracy_{n}:.3f}}")
''',
]


def module_level_script(lines: int, seed: int = 0) -> str:
    def block(rng, n):
        # Mostly steps spelled out; a loop or an evaluation now and then, after a first step.
        chosen = MODULE_BLOCKS[0] if n == 0 else rng.choices(MODULE_BLOCKS, weights=[8, 1, 1])[0]
        return chosen.format(n=n, previous=max(n - 1, 0), steps=rng.choice([10, 100]))

    return assembled(MODULE_HEADER, block, lines, seed)


if __name__ == "__main__":
    import argparse

    # A benchmark script on stdout, for the in-process keystroke benchmark (keystrokes.rs).
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    def line_count(text):
        lines = int(text)
        if lines < 1:
            raise argparse.ArgumentTypeError(f"{lines} lines: a script has one line at least")
        return lines

    parser.add_argument("lines", type=line_count, nargs="?", default=10_000, help="how many lines (default 10,000)")
    parser.add_argument("--module-level", action="store_true", help="a script written at module level")
    args = parser.parse_args()
    build = module_level_script if args.module_level else training_script
    sys.stdout.write(build(args.lines))
