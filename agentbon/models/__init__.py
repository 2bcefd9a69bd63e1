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
from agentbon.models.server import LocalServer

__all__ = ["LocalServer", "OpenAIClient", "client_for", "local_server", "make_model", "resolve_launcher", "serving"]

# Where the server is known: llama.cpp ignores `n`, vLLM honours it; anything else is found out on first use.
_SUPPORTS_N = {"llama-cpp": False, "vllm": True}


def resolve_launcher(config: ModelConfig) -> ModelConfig:
    """``launcher: auto`` made concrete: ``vllm`` where vLLM and a model for it are installed, else ``llama-cpp``.
    Unchanged when the launcher is named or an endpoint is given (then nothing is launched)."""
    if config.launcher != "auto" or config.endpoint:
        return config
    from agentbon.models.vllm_server import vllm_available

    return config.model_copy(update={"launcher": "vllm" if vllm_available(config) else "llama-cpp"})


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
        defaults={"temperature": config.temperature, "top_p": config.top_p, "max_tokens": config.max_tokens},
    )


def local_server(
    config: ModelConfig,
    *,
    port: int | None = None,
    log_path: Path | None = None,
    log: Callable[[str], None] = lambda msg: None,
) -> LocalServer:
    """The (not yet started) server ``config.launcher`` names."""
    config = resolve_launcher(config)
    if config.launcher == "vllm-actors":
        raise ConfigError("model.launcher: vllm-actors starts Ray engine actors, not a server (use vllm for a server)")
    if config.launcher == "vllm":
        from agentbon.models.vllm_server import vllm_server

        return vllm_server(config, port=port, log_path=log_path, log=log)
    from agentbon.models.llama_server import llama_cpp_server

    return llama_cpp_server(config, port=port, log_path=log_path, log=log)


def make_model(config: ModelConfig, *, log: Callable[[str], None] = lambda msg: None) -> Any:
    """A ``Model`` for ``config``: a client of ``config.endpoint``, else of a local server it starts and owns.

    ``vllm-actors``: the engine pool ``config.pool`` names, or one it starts and owns (``PoolModels``; its
    ``model_for(task_id)`` keeps a task's calls on one engine). Close the model to stop what it started.
    """
    if config.endpoint:
        return client_for(config, config.endpoint)
    config = resolve_launcher(config)
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
    config = resolve_launcher(config)
    if config.endpoint or config.launcher == "vllm-actors":  # engine actors: make_model starts (and owns) them
        yield config
        return
    with local_server(config, log=log) as endpoint:
        log(f"{config.launcher} serving {config.name} at {endpoint}")
        yield config.model_copy(update={"endpoint": endpoint})
