"""The int8 (w8a8) rewrite of a converted model directory: what is quantised, how exactly, and the config vLLM reads.

The real conversion (GGUF -> bf16 -> int8) and vLLM loading the result run in the vLLM integration tests.
"""

from __future__ import annotations

import json
from importlib.util import find_spec
from typing import Any

import pytest

from agentbon.models.gguf_to_hf import W8A8_CONFIG, is_linear_weight, quantize_dir, quantize_linear

pytestmark = pytest.mark.skipif(
    find_spec("torch") is None or find_spec("safetensors") is None, reason="torch and safetensors are not installed"
)
torch: Any = None
safetensors_torch: Any = None


@pytest.fixture(autouse=True, scope="module")
def _torch() -> None:
    """torch imported when the first test here runs, not at collection (~4 s in every pytest-xdist worker)."""
    global torch, safetensors_torch
    import safetensors.torch as safetensors_torch
    import torch


def _model_dir(tmp_path, shards: int = 1):
    gen = torch.Generator().manual_seed(0)
    tensors = {
        "model.embed_tokens.weight": torch.randn(50, 16, generator=gen).to(torch.bfloat16),
        "model.layers.0.input_layernorm.weight": torch.ones(16, dtype=torch.bfloat16),
        "model.layers.0.self_attn.q_proj.weight": torch.randn(16, 16, generator=gen).to(torch.bfloat16),
        "model.layers.0.self_attn.q_proj.bias": torch.randn(16, generator=gen).to(torch.bfloat16),
        "model.layers.0.mlp.down_proj.weight": (torch.randn(16, 32, generator=gen) * 0.02).to(torch.bfloat16),
        "lm_head.weight": torch.randn(50, 16, generator=gen).to(torch.bfloat16),
    }
    names = sorted(tensors)
    files = {f"model-{i + 1:05d}-of-{shards:05d}.safetensors" if shards > 1 else "model.safetensors": names[i::shards]
             for i in range(shards)}  # fmt: skip
    for file, keys in files.items():
        safetensors_torch.save_file({k: tensors[k] for k in keys}, str(tmp_path / file))
    if shards > 1:
        weight_map = {k: file for file, keys in files.items() for k in keys}
        (tmp_path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["Qwen2ForCausalLM"], "dtype": "bfloat16"}))
    return tensors


def _load(tmp_path):
    out = {}
    for f in tmp_path.glob("*.safetensors"):
        out.update(safetensors_torch.load_file(str(f)))
    return out


def test_linear_weights_become_int8_per_output_channel_and_nothing_else_changes(tmp_path):
    before = _model_dir(tmp_path)
    assert quantize_dir(tmp_path) == 2
    after = _load(tmp_path)
    for name in ("model.layers.0.self_attn.q_proj", "model.layers.0.mlp.down_proj"):
        q, scale, w = after[name + ".weight"], after[name + ".weight_scale"], before[name + ".weight"].float()
        assert q.dtype == torch.int8 and q.shape == w.shape and scale.shape == (w.shape[0], 1)
        assert int(q.abs().max()) == 127  # each row's largest weight uses the whole range
        # Rounding to the nearest step: at most half a step of error (plus the scale's own bf16 rounding).
        assert torch.all((q.float() * scale.float() - w).abs() <= scale.float() * 0.5 + w.abs() * 2**-7)
    for name in ("model.embed_tokens.weight", "model.layers.0.input_layernorm.weight", "lm_head.weight",
                 "model.layers.0.self_attn.q_proj.bias"):  # fmt: skip
        assert torch.equal(after[name], before[name])
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["quantization_config"] == W8A8_CONFIG and config["architectures"] == ["Qwen2ForCausalLM"]
    assert W8A8_CONFIG["ignore"] == ["lm_head"] and W8A8_CONFIG["format"] == "int-quantized"


def test_a_sharded_directory_keeps_its_index_complete(tmp_path):
    _model_dir(tmp_path, shards=2)
    quantize_dir(tmp_path)
    index = json.loads((tmp_path / "model.safetensors.index.json").read_text())["weight_map"]
    stored = {k: f.name for f in tmp_path.glob("*.safetensors") for k in safetensors_torch.load_file(str(f))}
    assert index == stored  # every tensor, scales included, is found in the shard the index names


def test_a_model_without_linear_layers_of_known_names_is_refused(tmp_path):
    safetensors_torch.save_file({"transformer.h.0.attn.c_attn.weight": torch.zeros(4, 4)}, str(tmp_path / "m.safetensors"))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(SystemExit, match="no linear layer weights"):
        quantize_dir(tmp_path)


def test_a_zero_row_stays_zero_without_dividing_by_zero():
    q, scale = quantize_linear(torch.zeros(3, 8, dtype=torch.bfloat16))
    assert torch.count_nonzero(q) == 0 and torch.all(torch.isfinite(scale.float()))


def test_which_names_are_linear_weights():
    assert is_linear_weight("model.layers.11.mlp.gate_proj.weight")
    assert not is_linear_weight("model.layers.11.mlp.gate_proj.bias")
    assert not is_linear_weight("lm_head.weight") and not is_linear_weight("model.embed_tokens.weight")
