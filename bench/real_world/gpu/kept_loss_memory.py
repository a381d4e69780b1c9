"""Does `total += loss` keep GPU memory when `loss` itself is backpropagated each step?

Measures torch.cuda.memory_allocated() after each of 20 steps of a 16-layer MLP (4096 wide,
batch 256), three ways: the loss kept with its graph after its own backward, the loss kept
detached, and the loss kept with its graph when it is never backpropagated (an eval-style leak).
Run on the GPU machine: python bench/real_world/gpu/kept_loss_memory.py
"""
import torch

torch.manual_seed(0)
layers = [torch.nn.Linear(4096, 4096) for _ in range(16)]
model = torch.nn.Sequential(*[m for l in layers for m in (l, torch.nn.GELU())]).cuda()
x = torch.randn(256, 4096, device="cuda")
for p in model.parameters():
    p.grad = torch.zeros_like(p)  # gradients allocated up front, so only the kept graphs differ


def run(keep, backward):
    total = 0
    base = torch.cuda.memory_allocated()
    for _ in range(20):
        loss = model(x).pow(2).mean()
        if backward:
            loss.backward()
        total = total + (loss if keep == "graph" else loss.detach())
    torch.cuda.synchronize()
    kept = (torch.cuda.memory_allocated() - base) / 2**20
    del total, loss
    return kept


print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}")
print(f"one step's activations: about {256 * 4096 * 4 * 32 / 2**20:.0f} MiB")
print(f"kept with graph, loss backpropagated each step: {run('graph', True):8.1f} MiB after 20 steps")
print(f"kept detached, loss backpropagated each step:   {run('detach', True):8.1f} MiB after 20 steps")
with torch.no_grad():
    pass
print(f"kept with graph, never backpropagated:          {run('graph', False):8.1f} MiB after 20 steps")
