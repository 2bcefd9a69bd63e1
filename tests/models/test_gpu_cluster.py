"""A simulated GPU cluster (CI has no GPU): Ray nodes that declare 3, 3 and 1 GPUs and fake engine actors, with
tensor parallelism 2. Engines per node come from the GPUs Ray sees (a node with 3 holds one engine of 2, a node
with 1 none); each engine's GPUs sit on one node, in a placement group of its own; a task's rollouts stay on its
home engine across nodes; when that engine dies, the task spills to the engine on the other node, and the revived
engine comes back on the same node and GPUs. See tests/models/gpu_cluster.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentbon.config import ModelConfig
from agentbon.errors import ConfigError
from agentbon.models.actors import engine_kwargs, plan_engines

pytestmark = pytest.mark.ray


def test_engines_are_placed_grouped_routed_and_revived_across_gpu_nodes() -> None:
    script = Path(__file__).parent / "gpu_cluster.py"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=900,
        env={**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["planned"] == 2 and out["fit"] == {"head": 1, "b": 1, "c": 0}
    assert "holds 2 such engine(s)" in out["refused_3x2"] and "holds 0 such engine(s)" in out["refused_0x4"]
    # one engine per node that has room, each on two GPUs of its own node
    assert sorted(p["node"] for p in out["placed"]) == ["b", "head"]
    assert all(len(p["gpus"]) == 2 for p in out["placed"])
    assert out["replies"] == ["rollout 0 seed=0 i=0", "rollout 1 seed=1 i=0"] and out["home_batches"] == 2
    home = out["home"]
    assert "died" in out["death"] and out["after_death"] == "still here seed=None i=0"
    assert out["dead"] == [home] and out["spills"] >= 1
    assert out["revived"] == [home] and out["revived_at"] == out["placed"][home]
    assert out["after_revival"] == "hello seed=None i=0" and out["dead_after_revival"] == []
    assert "cannot place 1 vLLM engine(s) of 2 GPU(s)" in out["third"]
    assert out["engine_gpus"] == [2, 2] and out["gpu_s"] >= 0  # each engine reports the GPUs Ray gave it
    assert out["groups"] == 2 and out["groups_after_close"] == 0


def node(gpus: float, alive: bool = True, name: str = "n") -> dict:
    return {"NodeID": name, "NodeManagerAddress": name, "Alive": alive, "Resources": {"GPU": gpus} if gpus else {}}


def test_engines_per_node_come_from_each_nodes_gpus_not_the_clusters_total() -> None:
    nodes = [node(8, name="a"), node(8, name="b"), node(3, name="c"), node(0, name="cpu"), node(8, False, "dead")]
    assert plan_engines(nodes, 1, 0) == (19, {"a": 8, "b": 8, "c": 3, "cpu": 0})
    assert plan_engines(nodes, 4, 0) == (4, {"a": 2, "b": 2, "c": 0, "cpu": 0})
    assert plan_engines(nodes, 4, 3)[0] == 3  # fewer than fit, as asked
    with pytest.raises(ConfigError, match=r"model.engines=5 .* holds 4 such engine\(s\) \(GPUs per node: a: 8, b: 8, c: 3, cpu: 0\)"):
        plan_engines(nodes, 4, 5)
    with pytest.raises(ConfigError, match="tensor_parallel_size=16"):
        plan_engines(nodes, 16, 0)  # 19 GPUs in all, but no node has 16


def test_gpu_engines_get_tensor_parallelism_and_a_memory_share_cpu_engines_keep_theirs() -> None:
    config = ModelConfig(tensor_parallel_size=4, gpu_memory_utilization=0.85, ctx=16384)
    gpu = engine_kwargs(config, gpu=True)
    assert gpu == {
        "max_model_len": 16384, "enable_prefix_caching": True, "tensor_parallel_size": 4,
        "gpu_memory_utilization": 0.85, "distributed_executor_backend": "mp",
    }  # fmt: skip
    assert "distributed_executor_backend" not in engine_kwargs(ModelConfig(), gpu=True)
    cpu = engine_kwargs(config)
    assert "tensor_parallel_size" not in cpu and cpu["max_num_batched_tokens"] == 16384


def test_auto_picks_engine_actors_on_a_gpu_host_with_vllms_gpu_build(tmp_path, monkeypatch) -> None:
    """A GPU host as this machine can fake one: ``nvidia-smi -L`` listing two GPUs on PATH and an importable
    ``vllm`` package (not the CPU build); the model is a given HF directory. Without the GPUs, auto stays off it."""
    import importlib

    from agentbon.models import resolve_model

    bin_dir, site = tmp_path / "bin", tmp_path / "site"
    bin_dir.mkdir()
    (site / "vllm").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    smi = bin_dir / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)'\necho 'GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)'\n")
    smi.chmod(0o755)
    model = tmp_path / "model"
    model.mkdir()
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    config = ModelConfig(path=str(model))
    no_driver = tmp_path / "no-driver"
    no_driver.mkdir()
    (no_driver / "nvidia-smi").write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed: no driver' >&2\nexit 9\n")
    (no_driver / "nvidia-smi").chmod(0o755)
    path = os.environ["PATH"]
    monkeypatch.setenv("PATH", f"{no_driver}{os.pathsep}{path}")
    assert resolve_model(config).launcher != "vllm-actors"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{path}")
    assert resolve_model(config).launcher == "vllm-actors"
    assert resolve_model(ModelConfig(path=str(tmp_path / "model.gguf"))).launcher != "vllm-actors"  # llama.cpp's
