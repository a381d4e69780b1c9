"""Fine-tune a causal language model on several GPUs with DistributedDataParallel.

Launch: torchrun --nproc_per_node=4 examples/finetune_llm_ddp.py
This script was written for culint's examples: it works, but it wastes GPU memory in the ways
culint catches.
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
from transformers import AutoModelForCausalLM, AutoTokenizer


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="meta-llama/Llama-2-7b-hf")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--checkpoint", default=None)
    return parser.parse_args()


def main():
    args = parse_args()
    local_rank = int(os.environ["LOCAL_RANK"])
    dist.init_process_group("nccl")

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForCausalLM.from_pretrained(args.model)
    model = model.cuda()
    model = DDP(model, device_ids=[local_rank])

    texts = ["culint reads training scripts before they run."] * 1024
    sampler = DistributedSampler(texts)
    loader = DataLoader(texts, batch_size=4, sampler=sampler)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            inputs = tokenizer(batch, return_tensors="pt", padding=True).to("cuda")
            outputs = model(**inputs, labels=inputs["input_ids"])
            loss = outputs.loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            torch.cuda.empty_cache()

    torch.cuda.empty_cache()
    del model, optimizer
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
