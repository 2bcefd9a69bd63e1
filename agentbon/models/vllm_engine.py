"""vLLM's offline engine (``vllm.LLM``) as a Ray actor that batches the requests of concurrent rollouts.

``vllm.LLM`` handles one call at a time, but a call may hold many conversations. The actor is threaded:
each rollout's ``chat`` call queues its request and waits; one batcher thread takes everything queued
and runs it as a single ``LLM.chat`` batch, so rollouts that ask at the same time are decoded together
and share the prefix cache (on by default here).

A request's own failure fails that request only. ``LLM.chat`` validates every request of a batch before it
generates anything (prompt longer than ``max_model_len``, sampling parameters the engine refuses) and raises a
request error (``VLLMValidationError``) for the whole call, aborting the requests it had already added. So when a
batch raises a request error (``is_request_error``), the batcher splits it in halves and runs each again until the
offending request is alone: it gets its error (``request_error``), its batchmates their answers, and no request
is generated twice. Any other exception is the engine's (CUDA error, dead engine core) and fails the whole batch.
"""

from __future__ import annotations

import os
import queue
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from agentbon.errors import AgentbonError, ContextLengthExceeded, EndpointMisconfigured, MissingExtra, ModelError
from agentbon.protocols import ChatResponse
from agentbon.types import Usage

# OpenAI request fields → vLLM SamplingParams fields.
_SAMPLING = {
    "temperature": "temperature", "top_p": "top_p", "top_k": "top_k", "max_tokens": "max_tokens",
    "stop": "stop", "seed": "seed", "n": "n", "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
}  # fmt: skip


_CLIENT_ERRORS = frozenset({"VLLMClientError", "VLLMValidationError"})
"""vLLM's request errors by name (the driver has no vllm to import): a ``ValueError`` in older versions, their own
``VLLMError`` tree in newer ones (0.32: ``VLLMValidationError`` < ``VLLMClientError`` < ``VLLMError`` < ``Exception``).
"""


def is_request_error(e: BaseException) -> bool:
    """True when vLLM refused one request (too long, bad sampling parameters, a conversation its template refuses),
    not when the engine failed."""
    return isinstance(e, ValueError | TypeError) or any(c.__name__ in _CLIENT_ERRORS for c in type(e).__mro__)


_CONTEXT = re.compile(
    r"max_model_len|maximum (context|model) length|longer than the maximum|context (length|window)", re.IGNORECASE
)
_CONVERSATION = frozenset({"messages", "prompt", "input", "input_tokens", "prompt_tokens"})


def request_error(e: BaseException, where: str = "vLLM engine") -> AgentbonError:
    """The error for a request vLLM rejected on its own: ``ContextLengthExceeded`` when it is too long (the
    rollout's outcome); ``EndpointMisconfigured`` when it names a sampling parameter (``VLLMValidationError
    .parameter``: the same refusal awaits every request, a config fix); else ``ModelError`` (a conversation the
    chat template refuses: this request's own fault)."""
    if isinstance(e, AgentbonError):
        return e
    if _CONTEXT.search(str(e)):
        return ContextLengthExceeded(f"{where}: {e}")
    parameter = getattr(e, "parameter", None)
    if isinstance(parameter, str) and parameter and parameter not in _CONVERSATION:
        return EndpointMisconfigured(f"{where} refuses the sampling parameter {parameter!r} (check model.*): {e}")
    return ModelError(f"{where} rejected the request: {type(e).__name__}: {e}")


def sampling_kwargs(seed: int | None, n: int, sampling: dict[str, Any]) -> dict[str, Any]:
    """OpenAI-style sampling arguments as ``SamplingParams`` keyword arguments.

    An unknown name is ``EndpointMisconfigured``: it comes from the config or the caller, so every request fails alike.
    """
    sampling = dict(sampling)
    wants_logprobs, top = sampling.pop("logprobs", None), sampling.pop("top_logprobs", None)
    out: dict[str, Any] = {"n": n}
    for key, value in sampling.items():
        if key not in _SAMPLING:
            raise EndpointMisconfigured(f"sampling parameter {key!r} is not supported by the vLLM engine")
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


Request = tuple[list[dict[str, Any]], Any, Future[list[ChatResponse]]]
"""One queued request: the conversation, its ``SamplingParams``, the future its caller waits on."""


class BatchingEngine:
    """Queues chat requests from many threads and runs them through ``llm.chat`` in batches.

    ``llm``: a ``vllm.LLM`` (or anything with its ``chat(list_of_conversations, sampling_params=[...])``);
    ``make_params``: ``vllm.SamplingParams`` (or a stand-in with the same keywords).
    """

    def __init__(self, llm: Any, make_params: Callable[..., Any], max_batch: int = 256):
        self.llm, self.make_params, self.max_batch = llm, make_params, max_batch
        self._queue: queue.Queue[Request | None] = queue.Queue()
        self.batches: list[int] = []
        """Sizes of the ``llm.chat`` calls made so far, re-runs of a split batch included (for tests and stats)."""
        self.totals = {"requests": 0, "prompt_tokens": 0, "cached_tokens": 0, "completion_tokens": 0, "rejected": 0}
        """Token counts of the requests answered so far (cached / prompt is the prefix-cache hit rate), and the
        number of requests the engine rejected on their own (too long, bad parameters)."""
        self.busy_s = 0.0
        """Seconds the engine spent generating (inside ``llm.chat``, failed calls included): its busy time."""
        self._thread = threading.Thread(target=self._loop, name="vllm-batcher", daemon=True)
        self._thread.start()

    def chat(
        self, messages: Sequence[dict[str, Any]], seed: int | None = None, n: int = 1, **sampling: Any
    ) -> list[ChatResponse]:
        """``n`` completions of ``messages``; blocks until the batch holding this request is done."""
        return self.submit(messages, seed, n, **sampling).result()

    def submit(
        self, messages: Sequence[dict[str, Any]], seed: int | None = None, n: int = 1, **sampling: Any
    ) -> Future[list[ChatResponse]]:
        """Queue one request for the next batch; its future holds the completions or this request's error."""
        try:
            params = self.make_params(**sampling_kwargs(seed, n, sampling))
        except (ValueError, TypeError) as e:  # SamplingParams refuses a value (temperature < 0): the config's fault
            raise EndpointMisconfigured(f"vLLM refuses the sampling settings (check model.*): {e}") from e
        future: Future[list[ChatResponse]] = Future()
        self._queue.put((list(messages), params, future))
        return future

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
            try:
                self._run(batch)
            except BaseException as e:  # a bug of ours: fail the batch's requests, keep the batcher alive
                for _, _, future in batch:
                    if not future.done():
                        future.set_exception(e)

    def _run(self, batch: list[Request]) -> None:
        self.batches.append(len(batch))
        start = time.monotonic()
        try:
            outputs = self.llm.chat([m for m, _, _ in batch], sampling_params=[p for _, p, _ in batch], use_tqdm=False)
        except Exception as e:
            self.busy_s += time.monotonic() - start
            if not is_request_error(e):  # the engine itself failed: every waiting rollout gets the error
                for _, _, future in batch:
                    future.set_exception(e)
                return
            # One request's fault fails vLLM's whole call: find it, run the others.
            if len(batch) == 1:
                self.totals["rejected"] += 1
                batch[0][2].set_exception(request_error(e))
                return
            half = len(batch) // 2
            self._run(batch[:half])
            self._run(batch[half:])
            return
        if len(outputs) != len(batch):
            raise RuntimeError(f"vLLM returned {len(outputs)} outputs for a batch of {len(batch)} requests")
        latency = time.monotonic() - start
        self.busy_s += latency
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

    def stats(self) -> dict[str, float]:
        """Requests, batches and token counts so far (prompt, cached prompt, completion), requests rejected, and
        the seconds spent generating."""
        return {**self.totals, "batches": len(self.batches), "busy_s": round(self.busy_s, 3)}

    def close(self) -> None:
        """Stop the batcher thread after the requests already queued."""
        self._queue.put(None)
        self._thread.join(timeout=60)


class EngineActor:
    """One vLLM engine; create with ``ray.remote(num_gpus=..., max_concurrency=...)(EngineActor)``."""

    def __init__(self, model: str, engine_kwargs: dict[str, Any] | None = None, max_batch: int = 256):
        self.started = time.monotonic()  # its GPUs are held from here, loading included
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

    def placement(self) -> dict[str, Any]:
        """Where Ray put this engine: its node and the GPU ids it holds (none on CPU)."""
        import ray

        context = ray.get_runtime_context()
        return {"node_id": context.get_node_id(), "gpus": [str(g) for g in ray.get_gpu_ids()]}

    def stats(self) -> dict[str, float]:
        """The engine's request, token and busy-time counts (``BatchingEngine.stats``), the GPUs it holds and the
        seconds since it started (GPU-seconds held = GPUs x alive_s; used = GPUs x busy_s)."""
        import ray

        alive = round(time.monotonic() - getattr(self, "started", time.monotonic()), 3)
        return {**self.engine.stats(), "gpus": len(ray.get_gpu_ids()), "alive_s": alive}

    def shutdown(self) -> None:
        """Stop the batcher and vLLM's engine-core process (a killed actor could leave that process behind)."""
        self.engine.close()
        core = getattr(getattr(self.llm, "llm_engine", None), "engine_core", None)
        if core is not None and hasattr(core, "shutdown"):
            core.shutdown()
