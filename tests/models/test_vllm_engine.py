"""The vLLM engine wrapper without vllm: batching of concurrent requests, sampling mapping, reply conversion;
and the Ray engine pool with fake engine actors (marker ray): task stickiness, prefix reuse, failures."""

from __future__ import annotations

import importlib.util
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentbon.errors import ContextLengthExceeded, EndpointMisconfigured, MissingExtra, ModelError, ServerFailure
from agentbon.models.router import EnginePool
from agentbon.models.vllm_engine import BatchingEngine, EngineActor, is_request_error, request_error, sampling_kwargs
from agentbon.testing.vllm import FakeEngineActor, FakeLLM, FakeSamplingParams, VLLMValidationError


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
    with pytest.raises(EndpointMisconfigured, match="'best_of' is not supported"):  # every request alike: config
        sampling_kwargs(None, 1, {"best_of": 2})


def test_concurrent_requests_are_run_as_one_batch_and_each_gets_its_own_answer():
    llm = GatedLLM()  # holds its first call, "slow", until the six others are queued: no timing involved
    engine = BatchingEngine(llm, FakeSamplingParams)
    first = engine.submit(msgs("slow"), 0)
    assert llm.entered.wait(60)
    with ThreadPoolExecutor(6) as pool:
        rest = [pool.submit(engine.chat, msgs(f"q{i}"), i) for i in range(6)]
        queued = threading.Event()
        for _ in range(6000):  # each thread queues its request at once; look every 10 ms for a minute at most
            if engine._queue.qsize() == 6 or queued.wait(0.01):
                break
        llm.gate.set()
        answers = [f.result()[0].content for f in rest]
    assert first.result()[0].content == "slow seed=0 i=0"
    assert answers == [f"q{i} seed={i} i=0" for i in range(6)]
    assert llm.batch_sizes == [1, 6]  # the six queued behind "slow" ran together
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


class GatedLLM(FakeLLM):
    """A ``FakeLLM`` whose first call waits for ``gate``: requests submitted meanwhile queue up as one batch."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.entered, self.gate = threading.Event(), threading.Event()

    def chat(self, messages, sampling_params, use_tqdm=False):
        if not self.entered.is_set():
            self.entered.set()
            assert self.gate.wait(60), "the test never opened the gate"
        return super().chat(messages, sampling_params, use_tqdm)


def queued_batch(llm: GatedLLM, engine: BatchingEngine, requests: list[tuple[str, dict]]) -> list:
    """Submit ``requests`` while the engine is busy with a first one, so the batcher takes them as one batch."""
    blocker = engine.submit(msgs("blocker"))
    assert llm.entered.wait(60)
    futures = [engine.submit(msgs(text), i, **kw) for i, (text, kw) in enumerate(requests)]
    llm.gate.set()
    assert blocker.result(60)[0].content == "blocker seed=None i=0"
    return futures


def test_the_fake_engine_like_vllm_rejects_the_whole_call_when_one_prompt_is_too_long():
    llm = FakeLLM(max_model_len=12)
    ok, long = msgs("short"), msgs("a question of many words that does not fit")
    with pytest.raises(VLLMValidationError, match="maximum context length is 12 tokens"):
        llm.chat([ok, long], [FakeSamplingParams(), FakeSamplingParams()])
    with pytest.raises(VLLMValidationError, match="greater than max allowed: 20"):
        llm.chat([ok, ok], [FakeSamplingParams(), FakeSamplingParams(logprobs=30)])
    assert llm.seen == []  # nothing of a rejected call was generated


def test_an_over_long_conversation_fails_alone_and_its_batchmates_finish():
    llm = GatedLLM(max_model_len=14)
    engine = BatchingEngine(llm, FakeSamplingParams)
    requests = [("q0", {}), ("TOOLONG", {}), ("q2", {}), ("q3 " + "word " * 20, {}), ("q4", {}),
                ("q5", {"logprobs": True, "top_logprobs": 30}), ("q6", {})]  # fmt: skip
    futures = queued_batch(llm, engine, requests)
    outcomes = [f.exception(60) or f.result()[0].content for f in futures]
    assert llm.batch_sizes[1] == 7  # the seven were tried as one batch, which vLLM rejects as a whole
    for i in (0, 2, 4, 6):
        assert outcomes[i] == f"q{i} seed={i} i=0"
    assert isinstance(outcomes[1], ContextLengthExceeded) and "at least 40000 input tokens" in str(outcomes[1])
    assert isinstance(outcomes[3], ContextLengthExceeded) and "at least 30 input tokens" in str(outcomes[3])
    assert isinstance(outcomes[5], EndpointMisconfigured) and "'logprobs'" in str(outcomes[5])  # a config fix
    assert len(llm.seen) == 1 + 4  # the blocker and the four good requests, each generated exactly once
    assert engine.stats()["rejected"] == 3 and engine.stats()["requests"] == 5
    assert engine.chat(msgs("after"))[0].content == "after seed=None i=0"
    engine.close()


def test_an_engine_failure_fails_every_request_in_the_batch_and_the_engine_keeps_serving():
    llm = GatedLLM()
    engine = BatchingEngine(llm, FakeSamplingParams)
    futures = queued_batch(llm, engine, [("q0", {}), ("CRASH", {}), ("q2", {})])
    for f in futures:  # the engine itself failed (not one request): nobody's answer can be trusted
        with pytest.raises(RuntimeError, match="illegal memory access"):
            f.result(60)
    assert llm.batch_sizes[1:] == [3]  # not split and re-run: an engine failure is not one request's fault
    assert engine.chat(msgs("after"))[0].content == "after seed=None i=0"
    engine.close()


def test_sampling_values_sampling_params_refuses_are_a_misconfiguration_not_the_rollouts_fault():
    def strict_params(**kw):
        if kw.get("temperature", 1.0) < 0:
            raise ValueError(f"temperature must be non-negative, got {kw['temperature']}.")
        return FakeSamplingParams(**kw)

    engine = BatchingEngine(FakeLLM(), strict_params)
    with pytest.raises(EndpointMisconfigured, match="temperature must be non-negative"):
        engine.chat(msgs("q"), temperature=-1.0)
    assert engine.chat(msgs("q"), temperature=0.5)[0].content == "q seed=None i=0"
    engine.close()


def test_vllm_request_errors_are_told_from_engine_failures_by_class():
    assert is_request_error(VLLMValidationError("logprobs", parameter="logprobs"))  # vllm 0.32: not a ValueError
    assert is_request_error(ValueError("The decoder prompt (length 9) is longer"))  # older vllm
    assert not is_request_error(RuntimeError("CUDA error: an illegal memory access was encountered"))


def test_a_conversation_the_engine_refuses_is_that_requests_model_error():
    assert type(request_error(ValueError("Conversation roles must alternate user/assistant"))) is ModelError
    assert (
        type(request_error(ValueError("The decoder prompt (length 9) is longer than the maximum model length of 8")))
        is ContextLengthExceeded
    )


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

    def test_bad_requests_fail_alone_and_a_dead_engine_is_a_server_failure(self):
        with self.pool(engines=2) as pool:
            model = pool.model_for("t")
            with pytest.raises(ContextLengthExceeded):
                model.chat(msgs("TOOLONG"))
            with pytest.raises(EndpointMisconfigured, match="not supported"):
                model.chat(msgs("x"), best_of=3)
            with pytest.raises(ServerFailure, match="failed: RuntimeError"):
                model.chat(msgs("CRASH"))
            with pytest.raises(ServerFailure, match="died"):
                model.chat(msgs("DIE"))
            # The dead engine is out of the rotation: the task's next request goes to the other one.
            assert model.chat(msgs("still here")).content == "still here seed=None i=0"
            assert len(pool.stats()["dead"]) == 1

    def test_an_over_long_rollout_fails_alone_while_its_batchmates_on_the_engine_finish(self):
        with self.pool(engines=1, engine_kwargs={"delay_s": 0.2}) as pool:
            models = [pool.model_for("t") for _ in range(6)]
            texts = ["q0", "q1", "TOOLONG", "q3", "q4", "q5"]

            def ask(i: int):
                try:
                    return models[i].chat(msgs(texts[i]), seed=i).content
                except ContextLengthExceeded as e:
                    return e

            with ThreadPoolExecutor(6) as ex:
                out = list(ex.map(ask, range(6)))
            assert isinstance(out[2], ContextLengthExceeded) and "maximum context length" in str(out[2])
            assert [o for i, o in enumerate(out) if i != 2] == [f"q{i} seed={i} i=0" for i in (0, 1, 3, 4, 5)]
            assert pool.stats()["engines"][0]["rejected"] == 1

    def test_engines_that_cannot_be_placed_fail_with_a_resource_hint(self):
        with pytest.raises(ServerFailure, match=r"cannot place 1 vLLM engine\(s\) of 1 GPU\(s\) each on one node within 2s"):
            EnginePool("fake", num_gpus=1, ready_timeout_s=2, actor_cls=FakeEngineActor)
