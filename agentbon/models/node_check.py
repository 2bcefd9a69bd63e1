"""Before GPU engines are placed, each node that will hold them checks what an engine needs there (docs/models.md,
"Where the engines' interpreter and weights must be").

The driver's disk and interpreter say nothing about a GPU node's: the engines run in that node's interpreter (or
``model.vllm_python``, a path on the GPU nodes) and read the weights from that node's disk. So the driver sends a
small Ray task to every such node, pinned to it, in two steps:

1. where the engines get an interpreter of their own (``py_executable``), the node's own worker checks that it is
   there and imports ray (the driver's version), agentbon and vLLM: asked in a subprocess, so that a missing or
   broken interpreter fails in seconds (Ray would otherwise keep trying to start a worker with it);
2. in the engines' runtime environment (that interpreter, their environment variables), a task checks that vLLM
   imports and is not the CPU build, and that the model's weights are there: a path must be a directory with a
   ``config.json`` and weight files (or a weights file); a hub id is downloaded by each engine and not checked.

Every node is checked at once; the error names each node (its address and the start of its Ray id) and what is
wrong there.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agentbon.errors import ConfigError, ServerFailure

CHECK_TIMEOUT_S = 300.0
"""Longest wait for one step of the check on every node (starting a worker in a fresh environment, importing vLLM)."""
WEIGHTS = ("*.safetensors", "*.bin", "*.pt", "*.gguf")


def node_name(node: dict[str, Any]) -> str:
    """``10.0.0.5 (node 1a2b3c4d5e6f)``: how an error names a node of ``ray.nodes()``."""
    return f"{node.get('NodeManagerAddress', '?')} (node {str(node.get('NodeID', '?'))[:12]})"


def interpreter_problem(python: str) -> str | None:
    """On the node: why ``python`` cannot host an engine there, or None."""
    from agentbon.models.actors import check_python

    if not Path(python).is_file():
        return f"the engines' interpreter {python} does not exist there (model.vllm_python)"
    try:
        check_python(python, fix="install vLLM's GPU build, the driver's ray and agentbon in it on this node")
    except Exception as e:  # noqa: BLE001 - MissingExtra, ConfigError, a subprocess that cannot start: reported
        return str(e)
    return None


def weights_problem(model: str) -> str | None:
    """Why the weights at ``model`` (a path on this node) cannot be loaded, or None."""
    path = Path(model)
    if path.is_file():
        return None
    if not path.is_dir():
        return f"the model's weights are not there: {model} does not exist"
    if not (path / "config.json").is_file() or not any(next(path.glob(p), None) for p in WEIGHTS):
        return f"{model} holds no model: it needs a config.json and weight files ({', '.join(WEIGHTS)})"
    return None


def engine_problems(model: str, is_path: bool) -> list[str]:
    """In the engines' runtime environment on the node: what keeps an engine from starting there."""
    import importlib

    from agentbon.models.vllm_server import cpu_build

    problems = []
    try:
        importlib.import_module("vllm")
    except Exception as e:  # noqa: BLE001 - missing, or broken (CUDA libraries): either way no engine starts
        problems.append(f"vllm does not import in {sys.executable}: {type(e).__name__}: {e}")
    else:
        if cpu_build(sys.executable):
            problems.append(
                f"{sys.executable} has vLLM's CPU build: GPU engines need the GPU build (pip install 'agentbon[gpu]' "
                "there, or -c model.vllm_python=<a GPU build's python on the GPU nodes>)"
            )
    weights = weights_problem(model) if is_path else None
    return [*problems, *([weights] if weights else [])]


NO_ANSWER = "no answer within {:g}s from a worker in the engines' environment"


def _run_everywhere(nodes: list[dict[str, Any]], task: Any, args: tuple, timeout_s: float, **options: Any) -> dict:
    """``task(*args)`` on each node, pinned there: ``{node name: result}``; a task that failed or did not answer in
    time gives the text saying so."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    remote = ray.remote(task)
    refs = {
        node_name(n): remote.options(
            num_cpus=0, scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False), **options
        ).remote(*args)
        for n in nodes
    }
    done, _ = ray.wait(list(refs.values()), num_returns=len(refs), timeout=timeout_s)
    out: dict[str, Any] = {}
    for name, ref in refs.items():
        if ref not in done:
            ray.cancel(ref, force=True)
            out[name] = NO_ANSWER.format(timeout_s)
            continue
        try:
            out[name] = ray.get(ref)
        except Exception as e:  # noqa: BLE001 - the worker could not run it: that is the node's problem to name
            out[name] = f"the check could not run there: {type(e).__name__}: {e}"
    return out


def check_nodes(
    nodes: list[dict[str, Any]], runtime_env: dict[str, Any], model: str, is_path: bool,
    timeout_s: float = CHECK_TIMEOUT_S,
) -> None:  # fmt: skip
    """Check every node of ``nodes`` (``ray.nodes()`` entries) for the engines' interpreter, vLLM and the weights:
    ``ConfigError`` naming each node and what is wrong there; ``ServerFailure`` where nodes only did not answer."""
    problems: dict[str, list[str]] = {}
    python = runtime_env.get("py_executable")
    if python:
        for name, found in _run_everywhere(nodes, interpreter_problem, (python,), timeout_s).items():
            if found:
                problems[name] = [found]
    rest = [n for n in nodes if node_name(n) not in problems]
    checked = _run_everywhere(rest, engine_problems, (model, is_path), timeout_s, runtime_env=runtime_env)
    for name, found in checked.items():
        if found:
            problems[name] = [found] if isinstance(found, str) else found
    if not problems:
        return
    listed = "; ".join(f"{name}: {', '.join(found)}" for name, found in sorted(problems.items()))
    if all(found == [NO_ANSWER.format(timeout_s)] for found in problems.values()):
        raise ServerFailure(f"vLLM engines: GPU node(s) did not answer the check before placing engines: {listed}")
    raise ConfigError(
        f"vLLM engines cannot start on {len(problems)} GPU node(s): {listed}. The engines' interpreter "
        "(model.vllm_python, else the node's own) with vLLM's GPU build, and the weights at the same path "
        "(model.path), must be on every GPU node (docs/models.md)"
    )
