"""``model.launcher: vllm-actors`` without vllm: engine interpreter and stats helpers; on a real local Ray
(marker ray) a named pool of fake engines found by workers, revival of a dead engine, and a whole batch
through the real orchestrator whose rollouts stay on their task's engine and record the prefix-cache hit rate."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from agentbon.config import ModelConfig
from agentbon.errors import ConfigError, ServerFailure
from agentbon.models import make_model
from agentbon.models.actors import PoolModels, engine_kwargs, engine_python, pool_cache_stats
from agentbon.models.router import EnginePool
from agentbon.models.vllm_engine import BatchingEngine
from agentbon.testing.vllm import FakeEngineActor, FakeLLM, FakePoolService, FakeSamplingParams

ACTORS = ModelConfig(launcher="vllm-actors", name="fake-model")


def msgs(text: str) -> list[dict]:
    return [
        {"role": "system", "content": "a long shared task prompt for every rollout"},
        {"role": "user", "content": text},
    ]


def test_engine_python_is_the_configured_one_unresolved_and_a_missing_one_is_named(tmp_path, monkeypatch):
    monkeypatch.delenv("AGENTBON_VLLM_PYTHON", raising=False)
    link = tmp_path / "venv" / "bin" / "python"
    link.parent.mkdir(parents=True)
    link.symlink_to(sys.executable)
    assert engine_python(ACTORS.model_copy(update={"vllm_python": str(link)})) == str(link)  # the link, not its target
    with pytest.raises(ConfigError, match="model.vllm_python: /nowhere/python does not exist"):
        engine_python(ACTORS.model_copy(update={"vllm_python": "/nowhere/python"}))
    monkeypatch.setenv("AGENTBON_VLLM_PYTHON", str(link))
    assert engine_python(ACTORS) == str(link)


def test_engine_kwargs_cover_whole_prompts_and_cache_prefixes(monkeypatch):
    from agentbon.models import actors
    from agentbon.models.cpu import parse_cpuinfo, vllm_format
    from tests.models.test_choice import EPYC_AVX2, SAPPHIRE_RAPIDS

    monkeypatch.setattr(actors, "default_format", lambda: vllm_format(parse_cpuinfo(SAPPHIRE_RAPIDS, cores=2)))
    kw = engine_kwargs(ACTORS.model_copy(update={"ctx": 32768}))
    assert kw == {"max_model_len": 32768, "max_num_batched_tokens": 32768, "enable_prefix_caching": True}
    # A CPU without bf16 arithmetic computes in fp32 (models/cpu.py).
    monkeypatch.setattr(actors, "default_format", lambda: vllm_format(parse_cpuinfo(EPYC_AVX2, cores=2)))
    assert engine_kwargs(ACTORS)["dtype"] == "float32"


def test_batching_engine_counts_prompt_and_cached_tokens():
    engine = BatchingEngine(FakeLLM(), FakeSamplingParams)
    engine.chat(msgs("first"))
    engine.chat(msgs("second"), n=2)
    stats = engine.stats()
    prompt = 2 * len("a long shared task prompt for every rollout first".split())
    assert stats["requests"] == 2 and stats["batches"] == 2 and stats["prompt_tokens"] == prompt
    assert stats["cached_tokens"] == 8  # the shared system prompt, seen by the second request
    engine.close()


def test_pool_cache_stats_sum_live_engines():
    stats = {
        "home": 5, "spills": 1, "dead": [1], "load": [0, 0],
        "engines": [{"requests": 4, "prompt_tokens": 400, "cached_tokens": 300, "completion_tokens": 9}, None],
    }  # fmt: skip
    out = pool_cache_stats(stats)
    assert out["prefix_cache_hit_rate"] == 0.75 and out["prefix_cache_queries"] == 400 and out["dead_engines"] == 1
    assert pool_cache_stats({"engines": []})["prefix_cache_hit_rate"] is None


def test_pool_models_need_a_pool():
    with pytest.raises(ConfigError, match="model.pool"):
        PoolModels(ACTORS)


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
class TestNamedPool:
    def pool(self, name: str, engines: int = 2) -> EnginePool:
        return EnginePool(
            "fake", name="fake-model", engines=engines, max_inflight=4, num_gpus=0, ready_timeout_s=60,
            actor_cls=FakeEngineActor, actor_name=name,
        )  # fmt: skip

    def test_workers_attach_by_name_with_the_config_defaults(self):
        import ray

        # pytest imports this file under a name Ray workers cannot import: ship the function by value.
        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        config = ACTORS.model_copy(update={"pool": "agentbon-test-attach", "engines": 2, "max_tokens": 77})
        with self.pool("agentbon-test-attach"):

            @ray.remote
            def in_worker(config: ModelConfig) -> tuple[str, str]:
                model = make_model(config).model_for("task-A")
                return model.chat(msgs("hello"), seed=3).content, model.name

            assert ray.get(in_worker.remote(config)) == ("hello seed=3 i=0", "fake-model")
            model = PoolModels(config).model_for("task-A")
            assert model.defaults["max_tokens"] == 77
        with pytest.raises(ServerFailure, match="not running"):
            PoolModels(config).model_for("task-A")

    def test_revive_replaces_a_dead_engine_under_its_name(self):
        config = ACTORS.model_copy(update={"pool": "agentbon-test-revive", "engines": 1})
        with self.pool("agentbon-test-revive", engines=1) as pool:
            with pytest.raises(ServerFailure, match="died"):
                PoolModels(config).model_for("t").chat(msgs("DIE"))
            with pytest.raises(ServerFailure, match="all 1 vLLM engines are dead"):
                PoolModels(config).model_for("t").chat(msgs("x"))
            assert pool.revive() == [0]
            assert PoolModels(config).model_for("t").chat(msgs("back")).content == "back seed=None i=0"
            assert pool.stats()["dead"] == []


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_batch_on_an_engine_pool_keeps_tasks_home_and_records_the_hit_rate(tmp_path: Path):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "orchestrate"))
    from orch_support import config, fakes, make_tasks

    from agentbon.orchestrate import run_batch
    from agentbon.orchestrate.events import ModelStats
    from agentbon.orchestrate.factories import default_model
    from agentbon.store import RunStore

    tasks = make_tasks(tmp_path, ["a", "b"])
    f = dataclasses.replace(fakes(tmp_path), model=default_model, server=FakePoolService)
    cfg = config(tmp_path, "model.launcher=vllm-actors", "model.engines=2", n=3, run_id="pool")
    result = run_batch(tasks, cfg, factories=f)
    store = RunStore(result.path)
    rollouts = store.rollouts()
    assert sorted(rollouts) == ["a/0", "a/1", "a/2", "b/0", "b/1", "b/2"]
    assert all(r.status == "submitted" for r in rollouts.values()), [r.error for r in rollouts.values()]
    assert sum(r.usage.cached_tokens for r in rollouts.values()) > 0  # engine counts reach Rollout.usage
    [stats] = store.recorded(ModelStats)
    assert stats.launcher == "vllm-actors" and stats.source == "engines"
    assert stats.home == 6 and stats.spills == 0 and stats.requests == 6
    assert 0 < stats.prefix_cache_hit_rate < 1


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_engines_run_on_the_vllm_venv_interpreter():
    """The venv of scripts/setup_vllm_cpu.sh hosts engine actors: same ray as the driver, agentbon importable."""
    import ray

    from agentbon.models.actors import check_python
    from agentbon.models.vllm_server import VENV_PYTHON

    if not VENV_PYTHON.is_file():
        pytest.skip("no .venv-vllm (bash scripts/setup_vllm_cpu.sh)")
    check_python(str(VENV_PYTHON))
    env = {"py_executable": str(VENV_PYTHON), "env_vars": {"AGENTBON_PROBE": "1"}}
    with EnginePool(
        "fake", engines=1, num_gpus=0, ready_timeout_s=120, actor_cls=FakeEngineActor, runtime_env=env
    ) as pool:
        assert pool.model_for("t").chat(msgs("hi")).content == "hi seed=None i=0"

        @ray.remote(num_cpus=0, runtime_env=env)
        def interpreter() -> str:
            return sys.executable

        ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
        assert ray.get(interpreter.remote()) == str(VENV_PYTHON)


def test_an_interpreter_without_vllm_is_refused_with_the_fix():
    import importlib.util

    from agentbon.errors import MissingExtra
    from agentbon.models.actors import check_python

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(MissingExtra, match="setup_vllm_cpu.sh"):
        check_python(sys.executable)
