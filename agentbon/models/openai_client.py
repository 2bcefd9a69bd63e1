"""A synchronous client for any OpenAI-compatible chat endpoint (vLLM, llama.cpp's server, hosted APIs).

Errors are sorted into the kinds the orchestrator treats differently (``replies.classify_status``):

- the server is gone or its engine is dead: ``ServerFailure``, an infra error (restart the server, retry the rollout);
- the endpoint refuses every request whatever the conversation: ``EndpointMisconfigured``, an infra error that no
  retry fixes (401 / 403: the API key; 404: an unknown model name or a wrong ``--endpoint`` path; a 400 / 422
  naming a request parameter: a sampling setting the server does not take);
- the model answered unusably, or the server refused this conversation: ``ModelError``, the sample's own failure,
  never retried (``ContextLengthExceeded`` when the conversation outgrew the context window).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from agentbon.errors import (
    ContextLengthExceeded,
    EndpointMisconfigured,
    ModelError,
    ModelTimeout,
    ServerFailure,
)
from agentbon.models.replies import classify_status, parse_choices
from agentbon.protocols import ChatResponse


class OpenAIClient:
    """A ``Model`` that talks to ``{base_url}/chat/completions``; thread-safe, picklable (for Ray tasks).

    ``supports_n``: True where the server honours ``n`` (vLLM), False where it ignores it (llama.cpp:
    the client fans out), None to find out on the first ``chat_n`` call.
    """

    def __init__(
        self,
        base_url: str,
        name: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 300.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 8.0,
        supports_n: bool | None = None,
        fanout_workers: int = 8,
        defaults: dict[str, Any] | None = None,
        context_window: int | None = None,
    ):
        self.base_url = base_url.rstrip("/")
        self.name = name
        self.api_key = api_key
        self.timeout_s, self.retries = timeout_s, retries
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self.supports_n = supports_n
        self.fanout_workers = fanout_workers
        self.defaults = dict(defaults or {})
        """Sampling parameters sent with every request unless a call overrides them."""
        self.context_window = context_window
        """The model's context in tokens (``model.ctx``) where known: the edit agent fits its prompt in it."""
        self._on_close: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(
            headers=headers, timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)), trust_env=False
        )

    def chat(self, messages: Sequence[dict[str, Any]], *, seed: int | None = None, **sampling: Any) -> ChatResponse:
        """One completion. Raises ``ServerFailure`` when the server is gone, ``EndpointMisconfigured`` when it refuses
        every request, ``ModelError`` on an unusable reply or a conversation it refuses."""
        return self._complete(messages, seed, 1, sampling)[0]

    def chat_n(
        self,
        messages: Sequence[dict[str, Any]],
        n: int,
        seeds: Sequence[int | None] | None = None,
        **sampling: Any,
    ) -> list:
        """``n`` completions of the same messages: one request with ``n`` where the server honours it, else n requests.

        ``seeds[i]`` seeds request i when fanning out; with server-side ``n`` only ``seeds[0]`` is sent.
        Usage is split so that the responses' usage sums to what the server reported.
        """
        if n < 1:
            raise ValueError(f"chat_n: n must be >= 1, got {n}")
        seeds = list(seeds) if seeds is not None else [None] * n
        if len(seeds) != n:
            raise ValueError(f"chat_n: {len(seeds)} seeds for n={n}")
        responses: list = []
        if self.supports_n is not False and n > 1:
            responses = self._complete(messages, seeds[0], n, sampling)
            with self._lock:
                if self.supports_n is None:
                    self.supports_n = len(responses) >= n
            if len(responses) >= n:
                return responses[:n]
        rest = seeds[len(responses) :]
        if len(rest) == 1 or self.fanout_workers <= 1:
            return responses + [self.chat(messages, seed=s, **sampling) for s in rest]
        with ThreadPoolExecutor(max_workers=min(len(rest), self.fanout_workers)) as pool:
            futures = [pool.submit(self.chat, messages, seed=s, **sampling) for s in rest]
            try:
                return responses + [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise

    def _complete(
        self, messages: Sequence[dict[str, Any]], seed: int | None, n: int, sampling: dict[str, Any]
    ) -> list[ChatResponse]:
        body: dict[str, Any] = {"model": self.name, "messages": list(messages), **self.defaults, **sampling}
        if seed is not None:
            body["seed"] = seed
        if n > 1:
            body["n"] = n
        body = {k: v for k, v in body.items() if v is not None}
        start = time.monotonic()
        data = self._post("/chat/completions", body)
        return parse_choices(data, latency_s=time.monotonic() - start, where=self.base_url)

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST with retries on transient failures only; returns the decoded JSON object."""
        url = self.base_url + path
        timeouts = 0
        attempt = 0
        while True:
            attempt += 1
            try:
                reply = self._http.post(url, json=body)
            except httpx.TimeoutException as e:
                timeouts += 1
                # A read timeout is retried once; after a second one a probe tells a busy server (it still answers
                # GET /models at once: overloaded, keep it) from a stuck one (restart it).
                if isinstance(e, httpx.ReadTimeout | httpx.WriteTimeout | httpx.PoolTimeout) and timeouts > 1:
                    if self.responsive():
                        raise ModelTimeout(
                            f"{url}: no reply within {self.timeout_s:g}s, twice, while the server answers probes "
                            "(overloaded: raise model.timeout_s or lower the concurrency)"
                        ) from e
                    raise ServerFailure(f"{url}: no reply within {self.timeout_s:g}s, twice, nor to a probe") from e
                if attempt > self.retries:
                    raise ServerFailure(f"{url}: {type(e).__name__} after {attempt} attempts") from e
                self._sleep(attempt, None)
                continue
            except httpx.TransportError as e:  # refused, reset mid-request, closed without a reply
                if attempt > self.retries:
                    raise ServerFailure(f"{url}: {type(e).__name__}: {e} (after {attempt} attempts)") from e
                self._sleep(attempt, None)
                continue
            status, text = reply.status_code, reply.text
            if status < 400:
                try:
                    data = json.loads(text)
                except ValueError as e:
                    raise ModelError(f"{url}: HTTP {status} with a body that is not JSON: {text[:200]!r}") from e
                if not isinstance(data, dict):
                    raise ModelError(f"{url}: HTTP {status} with JSON that is not an object: {text[:200]!r}")
                return data
            kind = classify_status(status, text)
            if kind == "dead":
                raise ServerFailure(f"{url}: HTTP {status}, the engine is dead: {text[:300]}")
            if kind == "context":
                raise ContextLengthExceeded(f"{url}: HTTP {status}: {text[:300]}")
            if kind == "auth":
                raise EndpointMisconfigured(
                    f"{url}: HTTP {status}, the API key was rejected (set model.api_key): {text[:200]}"
                )
            if kind == "not_found":
                raise EndpointMisconfigured(
                    f"{url}: HTTP {status}, the endpoint does not serve model {self.name!r} or has no such path "
                    f"(GET {self.base_url}/models lists its names; --model NAME picks one; --endpoint ends in /v1): "
                    f"{text[:200]}"
                )
            if kind == "parameter":
                raise EndpointMisconfigured(
                    f"{url}: HTTP {status}, the endpoint refuses a parameter sent with every request "
                    f"(check the model.* sampling settings): {text[:300]}"
                )
            if kind == "client":
                raise ModelError(f"{url}: HTTP {status}: {text[:300]}")
            if attempt > self.retries:
                raise ServerFailure(f"{url}: HTTP {status} after {attempt} attempts: {text[:300]}")
            self._sleep(attempt, reply.headers.get("retry-after"))

    def responsive(self) -> bool:
        """True when the server answers ``GET {base_url}/models`` (any HTTP status) within 10 s (or the timeout)."""
        try:
            self._http.get(self.base_url + "/models", timeout=min(10.0, self.timeout_s))
        except httpx.HTTPError:
            return False
        return True

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        delay = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1)) * (0.5 + random.random() / 2)
        if retry_after:
            try:
                delay = max(delay, min(float(retry_after), self.max_backoff_s))
            except ValueError:
                pass  # an HTTP date: fall back to our own backoff
        time.sleep(delay)

    def on_close(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the client is closed (e.g. stop the local server it talks to)."""
        self._on_close.append(callback)

    def close(self) -> None:
        """Close the connection pool and whatever was registered with ``on_close``; safe to call twice."""
        self._http.close()
        while self._on_close:
            self._on_close.pop()()

    def __enter__(self) -> OpenAIClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt in the receiving process with a fresh connection pool; a server it owns stays with the owner.
        kwargs = dict(
            api_key=self.api_key, timeout_s=self.timeout_s, retries=self.retries, backoff_s=self.backoff_s,
            max_backoff_s=self.max_backoff_s, supports_n=self.supports_n, fanout_workers=self.fanout_workers,
            defaults=self.defaults, context_window=self.context_window,
        )  # fmt: skip
        return (_rebuild, (self.base_url, self.name, kwargs))

    def __repr__(self) -> str:
        return f"OpenAIClient({self.base_url!r}, {self.name!r})"


def _rebuild(base_url: str, name: str, kwargs: dict[str, Any]) -> OpenAIClient:
    return OpenAIClient(base_url, name, **kwargs)
