"""Convert a GGUF file into a Hugging Face model directory (safetensors + tokenizer) that vLLM can load.

Run with the vLLM venv's interpreter (it needs torch, transformers, gguf and accelerate, not agentbon):
    python gguf_to_hf.py MODEL.gguf OUT_DIR [--weights w8a8|bf16]
The GGUF's quantised weights are dequantised to bf16 (greedy output matches the GGUF model after reloading).
``w8a8`` (the default) then stores the decoder's linear layers as int8 with a scale per output channel, and vLLM
quantises their inputs to int8 per token as it runs (the compressed-tensors "int-quantized" format, no calibration
data needed). On vLLM's CPU build without AMX (2 cores, oneDNN's int8 kernels) that decoded 48 tokens/s against 43
with 16 requests of 2.4k-token prompts in flight, answered 10 real demo prompts in 196 s against 259 s, and holds
2.2 GB of weights instead of 3.5; the bf16 model's own greedy replies scored 0.174 nats/token under it against
0.171 under bf16. Embeddings, norms and ``lm_head`` stay bf16.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""The decoder's linear layers (Llama/Qwen names) whose weights ``w8a8`` stores as int8."""

W8A8_CONFIG: dict[str, Any] = {
    "quant_method": "compressed-tensors",
    "format": "int-quantized",
    "quantization_status": "compressed",
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel", "dynamic": False},
            "input_activations": {"num_bits": 8, "type": "int", "symmetric": True, "strategy": "token", "dynamic": True},
        }
    },
    "ignore": ["lm_head"],
}
"""``quantization_config`` of a ``w8a8`` directory: int8 weights per output channel, int8 inputs per token."""


def quantize_linear(weight: Any) -> tuple[Any, Any]:
    """Symmetric int8 per output channel: ``(int8 weight, scale)`` with ``weight ≈ q * scale`` (scale shape [N, 1])."""
    import torch

    w = weight.float()
    scale = w.abs().amax(dim=1, keepdim=True).clamp(min=1e-8) / 127.0
    q = torch.round(w / scale).clamp(-127, 127).to(torch.int8)
    return q.contiguous(), scale.to(weight.dtype).contiguous()


def is_linear_weight(name: str) -> bool:
    """True for ``model.layers.<i>.<block>.<one of LINEAR>.weight``."""
    parts = name.split(".")
    return name.startswith("model.layers.") and parts[-1] == "weight" and parts[-2] in LINEAR


def quantize_dir(folder: Path) -> int:
    """Rewrite the bf16 directory ``folder`` in place as ``w8a8``; returns how many weights were quantised."""
    from safetensors.torch import load_file, save_file

    index_path = folder / "model.safetensors.index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else None
    done = 0
    for shard in sorted(folder.glob("*.safetensors")):
        tensors = load_file(str(shard))
        out = {}
        for name, tensor in tensors.items():
            if is_linear_weight(name):
                out[name], out[name.removesuffix("weight") + "weight_scale"] = quantize_linear(tensor)
                if index is not None:
                    index["weight_map"][name.removesuffix("weight") + "weight_scale"] = shard.name
                done += 1
            else:
                out[name] = tensor
        del tensors
        save_file(out, str(shard), metadata={"format": "pt"})
    if done == 0:
        raise SystemExit(f"{folder}: no linear layer weights named like {LINEAR}; not a Llama/Qwen-style model")
    if index is not None:
        index_path.write_text(json.dumps(index, indent=2))
    config_path = folder / "config.json"
    config = json.loads(config_path.read_text())
    config["quantization_config"] = W8A8_CONFIG
    config_path.write_text(json.dumps(config, indent=2))
    return done


def convert(gguf: Path, out: Path, weights: str = "w8a8") -> None:
    """Write ``out`` (config, tokenizer, safetensors) from ``gguf``; atomic: a partial directory never stays."""
    import gc

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    start = time.monotonic()
    folder, name = str(gguf.parent), gguf.name
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(
        folder,
        gguf_file=name,
        dtype=torch.bfloat16,
        quantization_config=GgufConfig(gguf_file=name, dequantize=True),
    )
    # The weights are plain bf16 now; the quantizer bookkeeping would make save_pretrained refuse to save.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    del model
    gc.collect()
    note = ""
    if weights == "w8a8":
        note = f", {quantize_dir(tmp)} linear weights as int8"
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(f"converted {gguf} -> {out} ({weights}{note}) in {time.monotonic() - start:.0f}s")


if __name__ == "__main__":
    args = sys.argv[1:]
    kind = "w8a8"
    if "--weights" in args:
        at = args.index("--weights")
        kind = args[at + 1] if at + 1 < len(args) else ""
        del args[at : at + 2]
    if len(args) != 2 or kind not in ("w8a8", "bf16"):
        sys.exit("usage: python gguf_to_hf.py MODEL.gguf OUT_DIR [--weights w8a8|bf16]")
    convert(Path(args[0]), Path(args[1]), kind)
