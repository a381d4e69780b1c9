"""Write the tracebacks of ordinary Python errors, none of them a GPU error, next to this file.

Each snippet runs in its own interpreter; its stderr is saved as <name>.log. Some mention CUDA,
memory or ranks in passing, the way training scripts do, to test that explain stays quiet.
Run: python3 bench/explain_accuracy/ordinary/make.py
"""

import pathlib
import subprocess
import sys

SNIPPETS = {
    "zero_division": "lr = 0.1\nsteps = 0\nprint(lr / steps)",
    "key_error_state_dict": "state = {'model.weight': 1}\nprint(state['module.model.weight'])",
    "module_not_found_torch": "import torch",
    "import_error_name": "from os import cuda_malloc",
    "attribute_none_cuda": "model = None\nmodel.cuda()",
    "name_error_device": "x = 1\nprint(devcie)",
    "file_not_found_checkpoint": "open('/data/checkpoints/cuda_run/epoch_10.pt', 'rb')",
    "value_error_unpack": "batch = (1, 2, 3)\ninputs, labels = batch",
    "type_error_args": "def train_step(model, batch, optimizer):\n    pass\ntrain_step(1, 2)",
    "index_error": "ranks = [0, 1]\nprint(ranks[4])",
    "recursion": "def f(n):\n    return f(n + 1)\nf(0)",
    "memory_error": "x = bytearray(2**62)",
    "assertion_world_size": "world_size = 3\nassert world_size % 2 == 0, 'world size must be even, got 3 ranks'",
    "json_decode": "import json\njson.loads('{\"lr\": 0.1,}')",
    "runtime_error_plain": "raise RuntimeError('out of patience: validation loss did not improve for 10 epochs')",
    "keyboard_interrupt": "raise KeyboardInterrupt",
    "connection_refused": "import socket\nsocket.create_connection(('127.0.0.1', 9))",
    "unicode_decode": "b'\\xff\\xfe'.decode('utf-8')",
    "chained_exception": "try:\n    {}['gpu']\nexcept KeyError as e:\n    raise ValueError('config has no gpu section') from e",
    "syntax_error": "exec('for i in range(3) print(i)')",
}

here = pathlib.Path(__file__).parent
for name, code in SNIPPETS.items():
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    (here / f"{name}.log").write_text(result.stdout + result.stderr)
    print(name, result.returncode)
