"""Generate text with a large model and a hand-made cuBLAS handle.

Written for culint's examples: the environment set-up in it is silently ignored or wrong.
"""

import os

import cupy
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

torch.cuda.set_device(2)
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:true,max_split_size_mb=512"
os.environ["CUBLASLT_HEURISTIC_MODE"] = "1"


def warm_up_gemm():
    handle = cupy.cuda.cublas.create()
    cupy.cuda.cublas.setPointerMode(handle, cupy.cuda.cublas.CUBLAS_POINTER_MODE_HOST)


def main():
    tokenizer = AutoTokenizer.from_pretrained("meta-llama/Llama-2-13b-hf")
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-13b-hf", device_map="auto")
    warm_up_gemm()
    with torch.no_grad():
        inputs = tokenizer("culint reads", return_tensors="pt").to("cuda")
        print(tokenizer.decode(model.generate(**inputs, max_new_tokens=20)[0]))


if __name__ == "__main__":
    main()
