"""The embedded default server: llama-cpp-python's OpenAI-compatible server on the cached Qwen GGUF.

It serialises requests and ignores ``n`` (clients fan out), and reports no cached-token counts.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

from agentbon.config import ModelConfig
from agentbon.errors import ConfigError, MissingExtra
from agentbon.models import weights
from agentbon.models.server import LOOPBACK, LocalServer, free_port

PROMPT_CACHE_BYTES = 2 << 30
"""llama.cpp's in-memory cache of evaluated prompts (``--cache``), every byte a kept prompt holds counted
(``agentbon.models.llama_main``): the N rollouts of a task send the same long prompt, and rollouts of two tasks
interleave, so the one prompt the server keeps on its own is the wrong one half the time. On a 2-core AVX2 EPYC a
2,527-token prompt took 77-97 s to evaluate each time without it and 5-9 s with it (the state restored from the
cache); a kept prompt holds 28 KiB a token with the embedded model (docs/models.md, "llama.cpp's memory")."""


def llama_cpp_command(
    model_path: str | Path, *, port: int, threads: int, ctx: int, alias: str, host: str = LOOPBACK,
    api_key: str | None = None, logprobs: bool = False,
) -> list[str]:  # fmt: skip
    """The command line that serves ``model_path`` on ``host``:``port`` (requiring ``api_key`` where given), with
    logprobs only where asked (keeping every position's logits costs ctx x vocabulary x 4 bytes: 4.6 GiB for the
    embedded model at 8192)."""
    return [
        sys.executable, "-m", "agentbon.models.llama_main",
        "--model", str(model_path),
        "--model_alias", alias,
        "--host", host,
        *(["--api_key", api_key] if api_key else []),
        "--port", str(port),
        "--n_threads", str(threads),
        "--n_ctx", str(ctx),
        # A new request must queue behind a running one, not cancel it (agents share one server).
        "--interrupt_requests", "False",
        "--logits_all", str(logprobs),
        "--cache", "True", "--cache_size", str(PROMPT_CACHE_BYTES),
    ]  # fmt: skip


def llama_cpp_server(
    config: ModelConfig,
    *,
    port: int | None = None,
    log_path: Path | None = None,
    log: Callable[[str], None] = lambda msg: None,
    host: str = LOOPBACK,
    api_key: str | None = None,
) -> LocalServer:
    """A (not yet started) llama.cpp server for ``config``: ``config.path`` or the embedded default weights."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise MissingExtra("llama-cpp-python", "local")
    if config.path:
        model_path = Path(config.path).expanduser()
        if not model_path.is_file():
            raise ConfigError(f"model.path: {model_path} is not a file (llama-cpp needs a GGUF file)")
    else:
        model_path = weights.fetch(log=log)
    port = port or free_port(host)
    command = llama_cpp_command(
        model_path, port=port, threads=config.threads, ctx=config.ctx, alias=config.name, host=host, api_key=api_key,
        logprobs=config.logprobs,
    )
    return LocalServer(
        command, port=port, name="llama-cpp", ready_timeout_s=300.0, log_path=log_path, host=host, api_key=api_key
    )
