#!/usr/bin/env bash
# Produce real GPU error texts for `culint explain`'s fixtures and accuracy set.
# Run on the GPU machine: OUT=/some/dir bench/explain_errors/run.sh
# Writes $OUT/explain_errors.tar.gz holding logs/<case>.log (stdout and stderr of each case),
# logs/MANIFEST.tsv (case, exit status, command) and logs/versions.txt.
set -u
cd "$(dirname "$0")"
LOGS=$(mktemp -d)/logs
mkdir -p "$LOGS"
: >"$LOGS/MANIFEST.tsv"
export PYTHONUNBUFFERED=1

case_run() {  # name timeout command...
  local name=$1 limit=$2
  shift 2
  timeout -k 5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  printf '%s\t%s\t%s\n' "$name" "$?" "$*" >>"$LOGS/MANIFEST.tsv"
}
trun() {  # name timeout nproc port script [extra torchrun args]
  local name=$1 limit=$2 nproc=$3 port=$4 script=$5
  shift 5
  case_run "$name" "$limit" python3 -m torch.distributed.run --nproc-per-node "$nproc" --master-port "$port" "$@" "$script"
}

{
  date -u +%Y-%m-%dT%H:%M:%SZ
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv
  python3 -c 'import torch, triton, cupy; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "cudnn", torch.backends.cudnn.version(), "triton", triton.__version__, "cupy", cupy.__version__)'
} >"$LOGS/versions.txt" 2>&1

# Phase A: small, independent cases, side by side.
(
  for c in shapes cpu-oom dtype index keyerror backward-twice no-grad; do case_run "ordinary_$c" 60 python3 ordinary.py "$c"; done
) &
(
  for c in linear embed concat loss conv; do case_run "device_mismatch_$c" 60 python3 device_mismatch.py "$c"; done
) &
(
  case_run store_timeout 60 python3 store_timeout.py
  case_run misaligned_address 90 python3 misaligned.py misaligned
  case_run invalid_address_space 90 python3 misaligned.py address-space
) &
wait

# Phase B: distributed runs, one at a time.
trun nccl_duplicate_gpu 90 2 29501 dup_gpu.py
FAIL_MODE=mismatch trun gloo_child_failed 90 3 29502 gloo_child_failed.py
FAIL_MODE=oom trun gloo_child_failed_oom_tee 90 3 29503 gloo_child_failed.py --tee 3
TORCH_NCCL_ASYNC_ERROR_HANDLING=3 trun nccl_watchdog_timeout 90 1 29504 nccl_watchdog.py

# Phase C: the caching allocator's out-of-memory messages.
case_run oom_memory_fraction 60 python3 oom.py fraction
case_run oom_fragmentation 120 python3 oom.py fragmentation
case_run oom_too_large 60 python3 oom.py too-large

# Phase D: another process holds the GPU.
rm -f /tmp/explain_hog_ready
python3 other_process.py late >"$LOGS/oom_other_process_late.log" 2>&1 &
late=$!
sleep 12
python3 other_process.py hog 120 >"$LOGS/hog.log" 2>&1 &
hog=$!
for _ in $(seq 120); do [ -e /tmp/explain_hog_ready ] && break; sleep 0.5; done
wait "$late"; printf 'oom_other_process_late\t%s\tpython3 other_process.py late\n' "$?" >>"$LOGS/MANIFEST.tsv"
case_run oom_context_creation 60 python3 other_process.py context
case_run oom_context_creation_conv 60 python3 other_process.py conv
nvidia-smi >"$LOGS/nvidia_smi_during_hog.txt" 2>&1
kill "$hog"; wait "$hog"

tar -czf "${OUT:-.}/explain_errors.tar.gz" -C "$(dirname "$LOGS")" logs
cat "$LOGS/MANIFEST.tsv"
