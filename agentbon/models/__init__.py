"""Model clients and servers: an OpenAI-compatible client, local launchers, vLLM engines as Ray actors.

The driver either talks to a given endpoint or starts one local server and hands its endpoint to the
rollouts (``serving``); each rollout process builds its own client with ``make_model``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentbon.config import ModelConfig
from agentbon.errors import ConfigError
from agentbon.models.openai_client import OpenAIClient
from agentbon.models.server import LOOPBACK, LocalServer

__all__ = [
    "ENDPOINT_TOP_P",
    "LOCAL_TOP_K",
    "LocalServer",
    "OpenAIClient",
    "client_for",
    "local_server",
    "make_model",
    "resolve_model",
    "serving",
]

# Where the server is known: llama.cpp ignores `n`, vLLM honours it; anything else is found out on first use.
_SUPPORTS_N = {"llama-cpp": False, "vllm": True}


LOCAL_TOP_K = 40
"""``model.top_k`` where agentbon starts the server and the config sets neither ``top_k`` nor ``top_p``."""
ENDPOINT_TOP_P = 0.95
"""``model.top_p`` for an endpoint you give where the config sets neither ``top_p`` nor ``top_k``."""


def resolve_model(config: ModelConfig, *, log: Callable[[str], None] = lambda msg: None) -> ModelConfig:
    """The model config made concrete. With an endpoint: ``top_p`` ``ENDPOINT_TOP_P`` where no truncation is set.
    Where agentbon launches the server: ``launcher: auto`` becomes what ``choice.choose`` picks for this machine
    (engine actors on a GPU host with vLLM's GPU build, else vLLM's CPU build or llama.cpp by the CPU's flags or a
    calibration: docs/models.md, "Which server, and in what format"); ``top_k`` becomes ``LOCAL_TOP_K`` where no
    truncation is set (both servers take it, and vLLM's CPU build samples faster with it than with top-p)."""
    update: dict[str, Any] = {}
    untruncated = config.top_p is None and config.top_k is None
    if config.urls():
        if untruncated:
            update["top_p"] = ENDPOINT_TOP_P
    else:
        if config.launcher == "auto":
            from agentbon.models.choice import choose

            update["launcher"] = choose(config, log=log).launcher
        if untruncated:
            update["top_k"] = LOCAL_TOP_K
    return config.model_copy(update=update) if update else config


def client_for(config: ModelConfig, endpoint: str, supports_n: bool | None = None) -> OpenAIClient:
    """A client for ``endpoint`` with the config's name, key, timeout, retries and default sampling."""
    # llama.cpp answers one request at a time: fanning out in parallel would only queue requests on the
    # server, where the waiting counts against each request's timeout.
    serialised = supports_n is False and config.launcher == "llama-cpp"
    return OpenAIClient(
        endpoint,
        config.name,
        api_key=config.api_key,
        timeout_s=config.timeout_s,
        retries=config.retries,
        supports_n=supports_n,
        fanout_workers=1 if serialised else 8,
        defaults=config.sampling(),
        context_window=config.ctx,
    )


def local_server(
    config: ModelConfig,
    *,
    port: int | None = None,
    log_path: Path | None = None,
    log: Callable[[str], None] = lambda msg: None,
    host: str = LOOPBACK,
    api_key: str | None = None,
) -> LocalServer:
    """The (not yet started) server ``config.launcher`` names, listening on ``host`` and requiring ``api_key``."""
    config = resolve_model(config)
    if config.launcher == "vllm-actors":
        raise ConfigError("model.launcher: vllm-actors starts Ray engine actors, not a server (use vllm for a server)")
    if config.launcher == "vllm":
        from agentbon.models.vllm_server import vllm_server

        return vllm_server(config, port=port, log_path=log_path, log=log, host=host, api_key=api_key)
    from agentbon.models.llama_server import llama_cpp_server

    return llama_cpp_server(config, port=port, log_path=log_path, log=log, host=host, api_key=api_key)


def make_model(config: ModelConfig, *, log: Callable[[str], None] = lambda msg: None) -> Any:
    """A ``Model`` for ``config``: a client of ``config.endpoint``, else of a local server it starts and owns.

    ``model.endpoints``: ``EndpointModels``, whose ``model_for(task_id)`` keeps a task's calls on one endpoint
    through the run's router ``config.pool`` names (or a router of its own where none is named).

    ``vllm-actors``: the engine pool ``config.pool`` names, or one it starts and owns (``PoolModels``; its
    ``model_for(task_id)`` keeps a task's calls on one engine). Close the model to stop what it started.
    """
    config = resolve_model(config)
    if config.endpoint:
        return client_for(config, config.endpoint)
    if config.endpoints:
        from agentbon.models.endpoints import EndpointModels

        return EndpointModels(config)
    if config.launcher == "vllm-actors":
        from agentbon.models.actors import PoolModels, start_pool

        return PoolModels(config) if config.pool else PoolModels(config, start_pool(config, log=log))
    server = local_server(config, log=log)
    endpoint = server.start()
    log(f"{server.name} serving {config.name} at {endpoint} (ready in {server.started_s:.1f}s, log {server.log_path})")
    client = client_for(config, endpoint, _SUPPORTS_N[config.launcher])
    client.on_close(server.stop)
    return client


@contextmanager
def serving(config: ModelConfig, *, log: Callable[[str], None] = lambda msg: None) -> Iterator[ModelConfig]:
    """Yield ``config`` with ``endpoint`` set: as given, or a local server started now and stopped on exit."""
    config = resolve_model(config)
    if config.urls() or config.launcher == "vllm-actors":  # engine actors: make_model starts (and owns) them
        yield config
        return
    with local_server(config, log=log) as endpoint:
        log(f"{config.launcher} serving {config.name} at {endpoint}")
        yield config.model_copy(update={"endpoint": endpoint})
