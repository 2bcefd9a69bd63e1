"""Convert a GGUF file into a Hugging Face model directory (bf16 safetensors + tokenizer) that vLLM can load.

Run with the vLLM venv's interpreter (it needs torch, transformers, gguf and accelerate, not agentbon):
    python gguf_to_hf.py MODEL.gguf OUT_DIR
The GGUF's quantised weights are dequantised; greedy output matches the GGUF model after reloading.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path


def convert(gguf: Path, out: Path) -> None:
    """Write ``out`` (config, tokenizer, safetensors) from ``gguf``; atomic: a partial directory never stays."""
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
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    print(f"converted {gguf} -> {out} in {time.monotonic() - start:.0f}s")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: python gguf_to_hf.py MODEL.gguf OUT_DIR")
    convert(Path(sys.argv[1]), Path(sys.argv[2]))
