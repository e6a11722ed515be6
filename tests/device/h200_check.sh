#!/usr/bin/env bash
# What this project can check on a lent GPU machine (the `device` tool: one H200, this workplace's
# CUDA image with torch but no verl, vLLM, Ray or flash-attn, no network). Run from the repository
# root with the wheels of .whl carried (tests/device/README.md says how they are made); every step
# has its own time limit and writes its output under $OUT, so a slow step costs only itself.
set -u
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
  > "$OUT/00-wheels.txt" 2>&1 || { echo "wheel install failed"; tail -5 "$OUT/00-wheels.txt"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD/src
step() {  # step NAME SECONDS CMD...: the command's output and exit status under $OUT/NAME.txt
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  echo "== $name: exit $rc in $((SECONDS - t0)) s" | tee -a "$OUT/$name.txt"
  tail -n 4 "$OUT/$name.txt" | head -n 3
}
step 01-machine 60 bash -c 'date -u; nvidia-smi; nproc; free -g; python3 -c "
import sys, torch, transformers
print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), transformers.__version__)
print(torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0).total_memory / 2**30, \"GiB\")"'
# The preflight's NCCL row, its own code (lie.engines.allreduce), on the node's one GPU.
step 02-nccl 120 python3 -m lie.engines.allreduce --backend nccl --device cuda
# The whole preflight table as a GPU node runs it (the image's rows fail here: not our image).
step 03-preflight 150 python3 -m lie preflight --config config.yaml --runs qwen3-4b-base_dapo_gspo_lie \
  --workdir /tmp/preflight --device gpu
# GPU branches outside verl: TRL's trainer (use_cpu=False) and the transformers generator on CUDA.
# TESTS: other test files (those that need no verl, vLLM or Snakemake) instead of these two
step 04-pytest 240 python3 -m pytest -p no:cacheprovider -q --timeout 200 --basetemp=/tmp/bt -rfE \
  ${TESTS:-tests/test_train_trl.py tests/test_generate_evaluate.py}
