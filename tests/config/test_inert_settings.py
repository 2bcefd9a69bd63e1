"""No silent no-ops: a setting that the run's launcher or mode never reads is refused, naming the setting, its value and
the mode (agentbon/inert.py); the vLLM server gets tensor parallelism and the GPU memory share it used to drop."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentbon.config import ModelConfig, RunConfig, load_config
from agentbon.errors import ConfigError
from agentbon.preflight import Context
from agentbon.preflight.model import check_settings


def refused(*overrides: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=list(overrides))
    return str(caught.value)


def test_budget_tokens_without_a_budget_is_refused_at_load() -> None:
    message = refused("budget_tokens=100000")
    assert "budget_tokens=100000 does nothing without run.budget" in message
    assert "budget_first=2 does nothing without run.budget" in refused("budget_first=2")
    assert load_config(overrides=["budget=10", "budget_tokens=100000", "budget_first=2"]).budget_tokens == 100000


def test_tensor_parallelism_and_the_gpu_memory_share_reach_the_vllm_server(tmp_path: Path, monkeypatch) -> None:
    from agentbon.models.vllm_server import vllm_server

    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    monkeypatch.setenv("AGENTBON_VLLM_PYTHON", str(python))
    (tmp_path / "model").mkdir()
    config = load_config(
        overrides=["model.launcher=vllm", f"model.path={tmp_path / 'model'}", "model.tensor_parallel_size=4",
                   "model.gpu_memory_utilization=0.75"]
    ).model  # fmt: skip
    command = vllm_server(config).command
    assert command[command.index("--tensor-parallel-size") + 1] == "4"
    assert command[command.index("--gpu-memory-utilization") + 1] == "0.75"


@pytest.mark.parametrize(
    ("overrides", "named"),
    [
        (["model.launcher=llama-cpp", "model.tensor_parallel_size=2"], "model.tensor_parallel_size=2 does nothing with model.launcher=llama-cpp"),
        (["model.launcher=llama-cpp", "model.gpu_memory_utilization=0.5"], "model.gpu_memory_utilization=0.5 does nothing with model.launcher=llama-cpp"),
        (["model.launcher=llama-cpp", "model.engines=2"], "model.engines=2 does nothing with model.launcher=llama-cpp"),
        (["model.launcher=vllm", "model.threads=8"], "model.threads=8 does nothing with model.launcher=vllm"),
        (["model.launcher=vllm", "model.vllm_python=/v/bin/python"], "model.vllm_python='/v/bin/python' does nothing with model.launcher=vllm"),
        (["model.launcher=vllm", "model.max_inflight=8"], "model.max_inflight=8 does nothing with one model server"),
        (["model.launcher=vllm-actors", "model.timeout_s=30"], "model.timeout_s=30.0 does nothing with model.launcher=vllm-actors"),
        (["model.launcher=vllm-actors", "model.serve_host=0.0.0.0"], "model.serve_host='0.0.0.0' does nothing with model.launcher=vllm-actors"),
        (["model.endpoint=http://h:8000/v1", "model.path=/m"], "model.path='/m' does nothing with model.endpoint or model.endpoints given"),
        (["model.endpoint=http://h:8000/v1", "model.launcher=vllm"], "model.launcher='vllm' does nothing with model.endpoint or model.endpoints given"),
        (["model.endpoint=http://h:8000/v1", "model.ctx=4096"], "model.ctx=4096 does nothing with model.endpoint or model.endpoints given"),
        (["early_stop=false", "early_stop_fixed=2"], "early_stop_fixed=2 does nothing with run.early_stop off and no run.budget"),
        (["ray_address=10.0.0.1:6379", "concurrency=4"], "concurrency=4 does nothing on a cluster (run.ray_address)"),
        (["ray_address=10.0.0.1:6379", "ray_niceness=5"], "ray_niceness=5 does nothing on a cluster (run.ray_address)"),
        (["model.launcher=vllm-actors", "ray_niceness=5"], "ray_niceness=5 does nothing where agentbon starts no model server"),
        (["sandbox.backend=process", "sandbox.cpus=2"], "sandbox.cpus=2.0 does nothing with sandbox.backend=process"),
        (["sandbox.backend=process", "sandbox.user=root"], "sandbox.user='root' does nothing with sandbox.backend=process"),
        (["sandbox.backend=process", "sandbox.network=bridge"], "sandbox.network='bridge' does nothing with sandbox.backend=process"),
        (["sandbox.disk_limit=none", "sandbox.disk_check_s=1"], "sandbox.disk_check_s=1.0 does nothing without sandbox.disk_limit"),
        (["sandbox.drop_capabilities=false", "sandbox.cap_add=[SETUID]"], "sandbox.cap_add=['SETUID'] does nothing with sandbox.drop_capabilities off"),
        (["agent.type=bash", "agent.context_lines=100"], "agent.context_lines=100 does nothing with agent.type=bash"),
        (["agent.type=edit", "agent.observation_chars=100"], "agent.observation_chars=100 does nothing with agent.type=edit"),
        (["agent.type=mini", "agent.observation_chars=100"], "agent.observation_chars=100 does nothing with agent.type=edit, mini or command"),
        (["agent.type=mini", "agent.context_lines=100"], "agent.context_lines=100 does nothing with agent.type=bash, mini or command"),
        (["agent.type=bash", "agent.mini_config=swebench"], "agent.mini_config='swebench' does nothing unless agent.type=mini"),
        (["verify.flaky=strict", "verify.flaky_runs=5"], "verify.flaky_runs=5 does nothing unless verify.flaky=rerun"),
        (["select.critic=none", "select.critic_path=/c.json"], "select.critic_path='/c.json' does nothing with select.critic=judge, scale-judge or none"),
        (["select.critic=judge", "select.scale_repeats=3"], "select.scale_repeats=3 does nothing unless select.critic=scale-judge"),
        (["select.selectors=[tests, critic]", "select.comparisons=4"], "select.comparisons=4 does nothing without a tournament selector"),
        (["select.selectors=[tests, oracle]", "select.critic=judge"], "select.critic='judge' does nothing without a selector that uses a critic"),
        (["select.selectors=[tests, critic]", "select.soft_temperature=2"], "select.soft_temperature=2.0 does nothing without soft-bon"),
        (["report.usd_per_mtok_prompt=1"], "report.usd_per_mtok_prompt=1.0 does nothing without both report.usd_per_mtok_prompt and"),
        (["report.usd_per_sandbox_hour=0.5"], "report.usd_per_sandbox_hour=0.5 does nothing without both"),
    ],
)  # fmt: skip
def test_a_setting_its_mode_never_reads_is_refused_at_load(overrides: list[str], named: str) -> None:
    assert named in refused(*overrides)


@pytest.mark.parametrize(
    "overrides",
    [
        ["model.launcher=vllm", "model.tensor_parallel_size=2", "model.gpu_memory_utilization=0.5"],
        ["model.launcher=vllm-actors", "model.max_inflight=8", "model.engines=2", "model.vllm_python=/v/bin/python"],
        ["model.endpoints=[http://a:8000/v1, http://b:8000/v1]", "model.max_inflight=8", "model.api_key=k"],
        ["model.launcher=llama-cpp", "model.threads=4", "ray_niceness=5", "model.ctx=4096"],
        ["sandbox.backend=process", "sandbox.memory=4g", "sandbox.pids=64", "sandbox.network=host"],
        ["agent.type=bash", "agent.observation_chars=100", "agent.command_timeout_s=5"],
        ["agent.type=mini", "agent.mini_config=swebench", "agent.command_timeout_s=5"],
        ["report.usd_per_mtok_prompt=1", "report.usd_per_mtok_completion=2", "report.usd_per_sandbox_hour=0.5"],
        ["select.selectors=[soft-bon]", "select.soft_temperature=2", "select.critic_path=/c.json"],
        ["budget=10", "early_stop=false", "early_stop_fixed=2"],
        # values that turn a feature off where the mode does not have it either
        ["ray_address=10.0.0.1:6379", "ray_niceness=0"],
        ["model.endpoint=http://h:8000/v1", "ray_niceness=0"],
        ["sandbox.backend=process", "sandbox.warm=0", "sandbox.disk_limit=none", "sandbox.drop_capabilities=false"],
        # auto has not chosen yet: its checks wait for the preflight
        ["model.tensor_parallel_size=2", "model.threads=4", "model.vllm_cpu_threads=2"],
    ],
)  # fmt: skip
def test_settings_their_mode_reads_are_accepted(overrides: list[str]) -> None:
    load_config(overrides=overrides)


def test_several_are_named_together_in_one_error() -> None:
    message = refused("model.launcher=llama-cpp", "model.tensor_parallel_size=2", "budget_tokens=5")
    assert "model.tensor_parallel_size=2" in message and "budget_tokens=5" in message


def test_what_auto_chose_is_checked_by_the_preflight(monkeypatch, tmp_path: Path) -> None:
    """No vLLM here: ``auto`` chooses llama.cpp, which takes neither tensor parallelism nor engines."""
    import agentbon.models.vllm_server as vs

    monkeypatch.setenv("AGENTBON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AGENTBON_VLLM_PYTHON", raising=False)
    monkeypatch.setattr(vs, "VENV_PYTHON", tmp_path / "no-venv" / "bin" / "python")
    monkeypatch.setattr(vs.importlib.util, "find_spec", lambda name: None)
    config = RunConfig(model=ModelConfig(tensor_parallel_size=2, engines=3))
    [problem] = check_settings(Context(config, []))
    assert "model.tensor_parallel_size=2 does nothing with model.launcher=llama-cpp" in problem.cause
    assert "model.engines=3" in problem.cause and problem.fatal
    assert check_settings(Context(RunConfig(), [])) == []
