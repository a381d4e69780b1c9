"""Train a small GAN with gradient accumulation and the old torch.cuda.amp API.

Written for culint's examples: it trains, but it leaks graphs and buffers in the ways culint
catches.
"""

import torch
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast


class Generator(nn.Module):
    def __init__(self, latent=64, out=784):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(latent, 256), nn.ReLU(), nn.Linear(256, out), nn.Tanh())

    def forward(self, z):
        image = self.net(z)
        self.last_image = image
        return image


class Discriminator(nn.Module):
    def __init__(self, inp=784):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inp, 256), nn.LeakyReLU(0.2), nn.Linear(256, 1))

    def forward(self, x):
        return self.net(x)


def evaluate(generator, discriminator, batches):
    generator.eval()
    scores = []
    for z in batches:
        scores.append(discriminator(generator(z)).mean().item())
    return sum(scores) / len(scores)


def main():
    device = torch.device("cuda")
    generator, discriminator = Generator().to(device), Discriminator().to(device)
    state = torch.load("checkpoints/gan.pt")
    generator.load_state_dict(state["generator"])
    opt_g = torch.optim.Adam(generator.parameters(), lr=2e-4)
    opt_d = torch.optim.Adam(discriminator.parameters(), lr=2e-4)
    scaler = GradScaler()
    criterion = nn.BCEWithLogitsLoss()
    accumulation_steps = 4
    d_losses = []

    real_batches = [torch.randn(64, 784, device=device) for _ in range(100)]
    for real in real_batches[:10]:  # warm up the discriminator alone
        warm_up_loss = criterion(discriminator(real), torch.ones(64, 1, device=device))
        warm_up_loss.backward(retain_graph=True)
        opt_d.step()
        opt_d.zero_grad()

    for step, real in enumerate(real_batches):
        z = torch.randn(64, 64, device=device)
        with autocast():
            fake = generator(z)
            d_loss = criterion(discriminator(real), torch.ones(64, 1, device=device)) + criterion(
                discriminator(fake.detach()), torch.zeros(64, 1, device=device)
            )
        scaler.scale(d_loss).backward(retain_graph=True)
        d_losses.append(d_loss)
        if (step + 1) % accumulation_steps == 0:
            scaler.step(opt_d)
            opt_d.zero_grad(set_to_none=False)

        with autocast():
            g_loss = criterion(discriminator(fake), torch.ones(64, 1, device=device))
        scaler.scale(g_loss).backward()
        scaler.step(opt_g)
        scaler.update()

    print("eval score", evaluate(generator, discriminator, [torch.randn(64, 64, device=device)] * 10))


if __name__ == "__main__":
    main()
