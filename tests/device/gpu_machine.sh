#!/usr/bin/env bash
# Everything this project checks on one borrowed GPU machine (the `device` tool: one H100 or H200, a
# stock CUDA image with Python 3.12, torch and transformers but no verl, Ray, vLLM or flash-attn, no
# network). One command, steps in the order that gives the most if the machine is taken back early, each
# with its own time limit, each writing its output under $OUT (tests/device/README.md: the plan minute by
# minute). Carry: .device-kit (make device-kit) and, for step 5's tests, .device-kit-extra.
#
#   1 machine   the GPU, driver, torch, CUDA, NCCL, transformers                      ~5 s
#   2 probe     tests/device/memory_probe.py: verl's actor memory at 8B/8k, 4B/12k   ~2-4 min, no wheels
#   3 kit       the kit installed with pip --target; a failure skips step 4 only      ~20 s
#   4 verl      tests/device/verl_run.py: 4 verl steps on CUDA (FSDP, NCCL world 1, transformers rollout),
#               killed in step 3, resumed, merged; the preflight's memory and throughput rows   ~3-5 min
#   5 checks    what h200_check.sh ran before: the NCCL row, lie preflight --device gpu, the TRL trainer
#               and the transformers generator's tests on CUDA                           ~3-4 min
#
# STEPS="1 2" runs only those steps (e.g. a second call after a cut-short first one). The checkout's src/
# comes first on PYTHONPATH, so that a kit built before the last edit runs the current code; the kit's lie
# wheel still registers lie's trainer with verl (its verl.plugins entry point).
set -u
OUT=${OUT:-/tmp/device-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
STEPS=${STEPS:-1 2 3 4 5}
KIT=${KIT:-.device-kit}
SITE=/tmp/device-kit-site
wants() { [[ " $STEPS " == *" $1 "* ]]; }
step() {  # step NAME SECONDS CMD...: the command's output and exit status under $OUT/NAME.txt
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS
  timeout -k 5 "$limit" "$@" > "$OUT/$name.txt" 2>&1
  local rc=$?
  echo "== $name: exit $rc in $((SECONDS - t0)) s" | tee -a "$OUT/$name.txt"
  tail -n 6 "$OUT/$name.txt" | head -n -1
  return $rc
}

wants 1 && step 1-machine 60 bash -c 'date -u; nvidia-smi; nproc; free -g; python3 -c "
import sys, torch, transformers
print(sys.version.split()[0], torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), transformers.__version__)
print(torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0).total_memory / 2**30, \"GiB\")"'

# verl's actor memory at the paper's token budgets; needs nothing beyond the image
wants 2 && step 2-probe 300 python3 tests/device/memory_probe.py --device cuda --out "$OUT/probe.json"

install_kit() {  # the kit into $SITE once per machine; 0 when it is there
  [ -f "$SITE/.installed" ] && return 0
  if [ ! -f "$KIT/kit.json" ]; then
    echo "== 3-kit: no $KIT/kit.json (make device-kit, then carry $KIT)" | tee "$OUT/3-kit.txt"
    return 1
  fi
  step 3-kit 120 python3 -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$KIT"/*.whl && touch "$SITE/.installed"
}

if wants 3 || wants 4; then
  install_kit || echo "== 4-verl: skipped, the kit is not installed (3-kit.txt); steps 1, 2 and 5 go on" | tee "$OUT/4-verl.txt"
fi

if wants 4 && [ -f "$SITE/.installed" ]; then
  # the run setting training.gpu_rollout: transformers (no vLLM on the machine); the trial's logs and its
  # composed verl config come back under $OUT
  PYTHONPATH="$PWD/src:$SITE" step 4-verl 420 python3 tests/device/verl_run.py --device gpu --rollout transformers \
    --workdir /tmp/device-verl --out "$OUT/verl_run.json"
  mkdir -p "$OUT/verl-logs" && cp -r /tmp/device-verl/logs/. "$OUT/verl-logs/" 2>/dev/null
  find /tmp/device-verl/out -name 'verl_config.yaml' -exec cp {} "$OUT/verl-logs/" \; 2>/dev/null
fi

if wants 5; then
  install_kit || echo "== 5: without the kit, lie preflight and the tests lack math-verify and the rest"
  # the kit's wheels (math-verify, datasets, ...) and TRL with pytest-timeout (.device-kit-extra), TRL in a
  # folder of its own: verl must never see it (it imports a class TRL 1.16 lacks)
  EXTRA=/tmp/device-extra-site
  if [ -d .device-kit-extra ]; then
    python3 -m pip install --quiet --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$EXTRA" \
      .device-kit-extra/*.whl > "$OUT/5-extra-wheels.txt" 2>&1 || echo "== TRL's wheels did not install: 5-pytest fails"
  fi
  export PYTHONPATH="$PWD/src:$SITE"  # verl from the kit, and no TRL beside it
  step 5-nccl 120 python3 -m lie.engines.allreduce --backend nccl --device cuda
  step 5-preflight 150 python3 -m lie preflight --config config.yaml --runs qwen3-4b-base_dapo_gspo_lie \
    --workdir /tmp/preflight --device gpu
  # TRL's trainer and the transformers generator: neither imports verl
  PYTHONPATH="$PWD/src:$EXTRA:$SITE" step 5-pytest 240 python3 -m pytest -p no:cacheprovider -q --timeout 200 \
    --basetemp=/tmp/bt -rfE ${TESTS:-tests/test_train_trl.py tests/test_generate_evaluate.py}
fi
echo "== done: $OUT"
