"""vLLM's offline engine (``vllm.LLM``) as a Ray actor that batches the requests of concurrent rollouts.

``vllm.LLM`` handles one call at a time, but a call may hold many conversations. The actor is threaded:
each rollout's ``chat`` call queues its request and waits; one batcher thread takes everything queued
and runs it as a single ``LLM.chat`` batch, so rollouts that ask at the same time are decoded together
and share the prefix cache (on by default here).
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from agentbon.errors import MissingExtra, ModelError
from agentbon.protocols import ChatResponse
from agentbon.types import Usage

# OpenAI request fields → vLLM SamplingParams fields.
_SAMPLING = {
    "temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "max_tokens": "max_tokens",
    "stop": "stop", "seed": "seed", "n": "n", "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}  # fmt: skip


def sampling_kwargs(seed: int | None, n: int, sampling: dict[str, Any]) -> dict[str, Any]:
    """OpenAI-style sampling arguments as ``SamplingParams`` keyword arguments; unknown names are a ModelError."""
    sampling = dict(sampling)
    wants_logprobs, top = sampling.pop("logprobs", None), sampling.pop("top_logprobs", None)
    out: dict[str, Any] = {"n": n}
    for key, value in sampling.items():
        if key not in _SAMPLING:
            raise ModelError(f"sampling parameter {key!r} is not supported by the vLLM engine")
        if value is not None:
            out[_SAMPLING[key]] = value
    if wants_logprobs:  # vLLM returns the sampled token's logprob plus the top k
        out["logprobs"] = int(top or 0)
    if seed is not None:
        out["seed"] = seed
    return out


def responses_of(output: Any, latency_s: float) -> list[ChatResponse]:
    """One ``ChatResponse`` per completion in a vLLM ``RequestOutput``; usage sums to the request's."""
    prompt = len(getattr(output, "prompt_token_ids", None) or [])
    cached = int(getattr(output, "num_cached_tokens", 0) or 0)
    out = []
    for i, completion in enumerate(output.outputs):
        out.append(
            ChatResponse(
                content=completion.text,
                usage=Usage(
                    prompt_tokens=prompt if i == 0 else 0,
                    cached_tokens=cached if i == 0 else 0,
                    completion_tokens=len(completion.token_ids),
                    calls=1,
                ),
                finish_reason=completion.finish_reason,
                latency_s=latency_s,
                logprobs=_logprobs(completion),
            )
        )
    return out


def _logprobs(completion: Any) -> list[dict[str, Any]] | None:
    steps = getattr(completion, "logprobs", None)
    if not steps:
        return None
    out = []
    for token_id, step in zip(completion.token_ids, steps, strict=False):
        top = sorted(step.items(), key=lambda kv: -kv[1].logprob)
        chosen = step.get(token_id)
        out.append(
            {
                "token": chosen.decoded_token if chosen else None,
                "logprob": chosen.logprob if chosen else None,
                "top_logprobs": [{"token": lp.decoded_token, "logprob": lp.logprob} for _, lp in top],
            }
        )
    return out


class BatchingEngine:
    """Queues chat requests from many threads and runs them through ``llm.chat`` in batches.

    ``llm``: a ``vllm.LLM`` (or anything with its ``chat(list_of_conversations, sampling_params=[...])``);
    ``make_params``: ``vllm.SamplingParams`` (or a stand-in with the same keywords).
    """

    def __init__(self, llm: Any, make_params: Callable[..., Any], max_batch: int = 256):
        self.llm, self.make_params, self.max_batch = llm, make_params, max_batch
        self._queue: queue.Queue[tuple[list[dict[str, Any]], Any, Future[list[ChatResponse]]] | None] = queue.Queue()
        self.batches: list[int] = []
        """Sizes of the batches run so far (for tests and stats)."""
        self.totals = {"requests": 0, "prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0}
        """Token counts of the requests answered so far; cached / prompt is the prefix-cache hit rate."""
        self._thread = threading.Thread(target=self._loop, name="vllm-batcher", daemon=True)
        self._thread.start()

    def chat(
        self, messages: Sequence[dict[str, Any]], seed: int | None = None, n: int = 1, **sampling: Any
    ) -> list[ChatResponse]:
        """``n`` completions of ``messages``; blocks until the batch holding this request is done."""
        params = self.make_params(**sampling_kwargs(seed, n, sampling))
        future: Future[list[ChatResponse]] = Future()
        self._queue.put((list(messages), params, future))
        return future.result()

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < self.max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # finish this batch, then stop
                    break
                batch.append(item)
            self._run(batch)

    def _run(self, batch: list[tuple[list[dict[str, Any]], Any, Future[list[ChatResponse]]]]) -> None:
        self.batches.append(len(batch))
        start = time.monotonic()
        try:
            outputs = self.llm.chat([m for m, _, _ in batch], sampling_params=[p for _, p, _ in batch], use_tqdm=False)
        except Exception as e:  # the engine failed the whole batch: every waiting rollout gets the error
            for _, _, future in batch:
                future.set_exception(e)
            return
        latency = time.monotonic() - start
        for (_, _, future), output in zip(batch, outputs, strict=True):
            responses = responses_of(output, latency)
            self._count(responses)
            future.set_result(responses)

    def _count(self, responses: list[ChatResponse]) -> None:
        totals = self.totals
        totals["requests"] += 1
        for r in responses:
            totals["prompt_tokens"] += r.usage.prompt_tokens
            totals["cached_tokens"] += r.usage.cached_tokens
            totals["completion_tokens"] += r.usage.completion_tokens

    def stats(self) -> dict[str, int]:
        """Requests, batches and token counts so far (prompt, cached prompt, completion)."""
        return {**self.totals, "batches": len(self.batches)}

    def close(self) -> None:
        """Stop the batcher thread after the requests already queued."""
        self._queue.put(None)
        self._thread.join(timeout=60)


class EngineActor:
    """One vLLM engine; create with ``ray.remote(num_gpus=..., max_concurrency=...)(EngineActor)``."""

    def __init__(self, model: str, engine_kwargs: dict[str, Any] | None = None, max_batch: int = 256):
        try:
            import vllm
        except ImportError as e:
            raise MissingExtra("vllm", "gpu") from e
        try:  # Ray starts workers at nice 15; the engine serves every rollout, so it should not yield to them
            os.setpriority(os.PRIO_PROCESS, 0, 0)
        except OSError:  # not allowed here (no CAP_SYS_NICE): stay at Ray's niceness
            pass
        from vllm.platforms import current_platform

        # On CPU, eager: ready in seconds instead of minutes of torch.compile, decoding as fast (vllm_server.vllm_command)
        kwargs = {"enable_prefix_caching": True, "enforce_eager": current_platform.is_cpu(), **(engine_kwargs or {})}
        self.llm = vllm.LLM(model=model, **kwargs)
        self.engine = BatchingEngine(self.llm, vllm.SamplingParams, max_batch=max_batch)

    def chat(self, messages: list[dict[str, Any]], seed: int | None, n: int, sampling: dict[str, Any]) -> list[dict]:
        """Completions as plain dicts (``ChatResponse.model_dump()``), cheap to send through Ray."""
        return [r.model_dump() for r in self.engine.chat(messages, seed, n, **sampling)]

    def ready(self) -> bool:
        return True

    def stats(self) -> dict[str, int]:
        """The engine's request and token counts (``BatchingEngine.stats``)."""
        return self.engine.stats()

    def shutdown(self) -> None:
        """Stop the batcher and vLLM's engine-core process (a killed actor could leave that process behind)."""
        self.engine.close()
        core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
