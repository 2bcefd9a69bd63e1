"""The vLLM engine wrapper without vllm: batching of concurrent requests, sampling mapping, reply conversion;
and the Ray engine pool with fake engine actors (marker ray): task stickiness, prefix reuse, failures."""

from __future__ import annotations

import importlib.util
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentbon.errors import ContextLengthExceeded, MissingExtra, ModelError, ServerFailure
from agentbon.models.fake_vllm import FakeEngineActor, FakeLLM, FakeSamplingParams
from agentbon.models.router import EnginePool
from agentbon.models.vllm_engine import BatchingEngine, EngineActor, sampling_kwargs


def msgs(text: str) -> list[dict]:
    return [
        {"role": "system", "content": "you fix bugs in this long shared task prompt"},
        {"role": "user", "content": text},
    ]


def test_sampling_maps_openai_names_and_rejects_unknown_ones():
    kw = sampling_kwargs(7, 3, {"temperature": 0.8, "max_tokens": 64, "stop": ["x"], "top_p": None})
    assert kw == {"n": 3, "temperature": 0.8, "max_tokens": 64, "stop": ["x"], "seed": 7}
    assert sampling_kwargs(None, 1, {"logprobs": True, "top_logprobs": 5})["logprobs"] == 5
    assert "logprobs" not in sampling_kwargs(None, 1, {"logprobs": False, "top_logprobs": 5})
    with pytest.raises(ModelError, match="'best_of' is not supported"):
        sampling_kwargs(None, 1, {"best_of": 2})


def test_concurrent_requests_are_run_as_one_batch_and_each_gets_its_own_answer():
    llm = FakeLLM(delay_s=0.3)
    engine = BatchingEngine(llm, FakeSamplingParams)
    engine.chat(msgs("warm-up"))  # occupies the engine while the others queue
    with ThreadPoolExecutor(8) as pool:
        first = pool.submit(engine.chat, msgs("slow"), 0)
        threading.Event().wait(0.05)
        rest = [pool.submit(engine.chat, msgs(f"q{i}"), i) for i in range(6)]
        answers = [f.result()[0].content for f in rest]
        assert first.result()[0].content == "slow seed=0 i=0"
    assert answers == [f"q{i} seed={i} i=0" for i in range(6)]
    assert llm.batch_sizes[:2] == [1, 1] and llm.batch_sizes[2] == 6  # the six queued behind "slow" ran together
    engine.close()


def test_replies_carry_usage_with_cached_prefix_and_n_completions():
    engine = BatchingEngine(FakeLLM(), FakeSamplingParams)
    engine.chat(msgs("first question"))
    out = engine.chat(msgs("second question"), 5, n=3, temperature=0.8)
    assert [r.content for r in out] == [f"second question seed=5 i={i}" for i in range(3)]
    prompt_words = len("you fix bugs in this long shared task prompt second question".split())
    assert out[0].usage.prompt_tokens == prompt_words and out[1].usage.prompt_tokens == 0
    assert out[0].usage.cached_tokens == 9  # the shared system prompt was seen before
    assert all(r.usage.calls == 1 and r.usage.completion_tokens == 4 for r in out)
    engine.close()


def test_logprobs_come_back_in_the_chat_shape():
    engine = BatchingEngine(FakeLLM(), FakeSamplingParams)
    r = engine.chat(msgs("YES"), logprobs=True, top_logprobs=2)[0]
    assert r.logprobs[0]["token"] == "t0" and r.logprobs[0]["logprob"] == -0.1
    assert [t["token"] for t in r.logprobs[0]["top_logprobs"]] == ["t0", "alt"]
    engine.close()


def test_an_engine_failure_fails_every_request_in_the_batch_and_the_engine_keeps_serving():
    engine = BatchingEngine(FakeLLM(), FakeSamplingParams)
    with pytest.raises(RuntimeError, match="illegal memory access"):
        engine.chat(msgs("CRASH"))
    assert engine.chat(msgs("after"))[0].content == "after seed=None i=0"
    engine.close()


def test_engine_actor_without_vllm_names_the_extra():
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(MissingExtra, match=r"agentbon\[gpu\]"):
        EngineActor("some/model")


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
class TestEnginePoolOnRay:
    def pool(self, **kw) -> EnginePool:
        kw.setdefault("engines", 3)
        kw.setdefault("max_inflight", 4)
        kw.setdefault("ready_timeout_s", 60)
        return EnginePool("fake", name="fake-model", num_gpus=0, actor_cls=FakeEngineActor, **kw)

    def test_rollouts_of_one_task_share_an_engine_and_its_prefix_cache(self):
        import ray

        with self.pool() as pool:
            models = [pool.model_for("task-A") for _ in range(4)]
            with ThreadPoolExecutor(4) as ex:
                out = list(ex.map(lambda im: im[1].chat(msgs(f"rollout {im[0]}"), seed=im[0]), enumerate(models)))
            assert [r.content for r in out] == [f"rollout {i} seed={i} i=0" for i in range(4)]
            home = pool.engines[ray.get(pool.router.home.remote("task-A"))]
            assert sum(ray.get(home.batch_sizes.remote())) == 4  # every request went home
            assert sum(r.usage.cached_tokens for r in out) >= 3 * 9  # later rollouts reuse the shared prompt
            stats = pool.stats()
            assert stats["home"] == 4 and stats["spills"] == 0 and stats["load"] == [0, 0, 0]

    def test_model_handle_pickles_and_chat_n_uses_one_request(self):
        import pickle

        with self.pool(engines=1) as pool:
            model = pickle.loads(pickle.dumps(pool.model_for("t")))
            out = model.chat_n(msgs("q"), 3, seeds=[11, 12, 13])
            assert [r.content for r in out] == [f"q seed=11 i={i}" for i in range(3)]
            assert model.name == "fake-model"

    def test_bad_requests_are_model_errors_and_a_dead_engine_is_a_server_failure(self):
        with self.pool(engines=2) as pool:
            model = pool.model_for("t")
            with pytest.raises(ContextLengthExceeded):
                model.chat(msgs("TOOLONG"))
            with pytest.raises(ModelError, match="not supported"):
                model.chat(msgs("x"), best_of=3)
            with pytest.raises(ServerFailure, match="failed: RuntimeError"):
                model.chat(msgs("CRASH"))
            with pytest.raises(ServerFailure, match="died"):
                model.chat(msgs("DIE"))
            # The dead engine is out of the rotation: the task's next request goes to the other one.
            assert model.chat(msgs("still here")).content == "still here seed=None i=0"
            assert len(pool.stats()["dead"]) == 1

    def test_engines_that_cannot_be_placed_fail_with_a_resource_hint(self):
        with pytest.raises(ServerFailure, match="not ready within 2s.*1 GPU"):
            EnginePool("fake", num_gpus=1, ready_timeout_s=2, actor_cls=FakeEngineActor)
