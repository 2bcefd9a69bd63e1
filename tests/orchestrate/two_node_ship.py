"""A two-node Ray cluster on this machine where nothing reads the suite's folder after loading (for
test_no_shared_filesystem.py).

Usage: python two_node_ship.py ROOT. Two demo tasks are copied to ROOT/suite and loaded; each gets a setup line
with a fresh nonce, so its task image does not exist yet and must be built from its repository. The head and a
worker node each declare 2 sandbox slots and keep their own cache (``AGENTBON_CACHE``: what each node landed of
what the run carried). The run joins the cluster by address, so it carries the repositories, the verifier
scripts and the base recipe through Ray; the display deletes ROOT/suite when the run says it has carried them,
before any unit starts. The model is scripted (the one factory seam); Docker sandboxes, the bash agent and the
test verifier are real. Prints one JSON line.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
import uuid
from pathlib import Path

from ray.cluster_utils import Cluster

from agentbon.agent import SUBMIT_COMMAND
from agentbon.config import load_config
from agentbon.orchestrate import Factories, run_batch
from agentbon.orchestrate.events import Event, Infra, Shipped
from agentbon.store import RunStore
from agentbon.tasks import load_suite
from agentbon.testing import FakeService, task_model

DEMO = Path(__file__).resolve().parents[2] / "tasks" / "demo"
TASKS = ("demo-migrate-dateparse", "demo-b-paginate")


def bash(command: str) -> str:
    return f"THOUGHT: next.\n\n```bash\n{command}\n```\n"


def main() -> None:
    root = Path(sys.argv[1])
    suite = root / "suite"
    for name in TASKS:
        shutil.copytree(DEMO / name, suite / name)
    loaded, errors = load_suite(suite)
    assert not errors, errors
    nonce = uuid.uuid4().hex[:12]
    tasks = [
        t.model_copy(update={"environment": t.environment.model_copy(update={"setup": [*t.environment.setup, f"echo {nonce}"]})})
        for t in loaded
    ]
    caches = {"head": root / "cache-head", "worker": root / "cache-worker"}
    os.environ["AGENTBON_CACHE"] = str(caches["head"])  # the head's raylet and workers inherit it
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "resources": {"agentbon_sandbox": 2, "agentbon_verify": 2}, "include_dashboard": False},
    )
    cluster.add_node(num_cpus=1, resources={"agentbon_sandbox": 2}, env_vars={"AGENTBON_CACHE": str(caches["worker"])})
    cluster.wait_for_nodes()
    seen: list[str] = []

    def display(event: Event) -> None:
        seen.append(event.kind)
        if isinstance(event, Shipped):
            shutil.rmtree(suite)  # from now on nobody may read it

    migration = next(t for t in tasks if t.kind == "migration")
    fix = f"git apply <<'AGENTBON_EOF'\n{migration.gold_patch}\nAGENTBON_EOF"
    model = functools.partial(
        task_model, table={"dateparse": [bash(fix), bash(SUBMIT_COMMAND)]}, default=[bash(SUBMIT_COMMAND)]
    )
    cfg = load_config(
        overrides=[f"run_dir={root / 'runs'}", "agent.type=bash", "model.name=scripted", "early_stop=false"],
        n=4, run_id=f"ship-{nonce}", ray_address=cluster.address,
    )  # fmt: skip
    import docker

    engine = docker.from_env()
    before = {i.id for i in engine.images.list(name="agentbon/task")}
    try:
        result = run_batch(tasks, cfg, factories=Factories(model=model, server=FakeService), emit=display)
        store = RunStore(result.path)
        rollouts = store.rollouts()
        grade = store.verdicts("grade")
        landed = {
            node: {
                "repos": sorted(p.name for p in (cache / "shipped" / "repos").glob("*.bundle")),
                "verifiers": [str(p) for p in (cache / "shipped" / "files").glob("*/verifiers/run_pytest.py")],
            }
            for node, cache in caches.items()
        }
        print(json.dumps({
            "suite_exists": suite.exists(),
            "shipped_at": seen.index("shipped") if "shipped" in seen else -1,
            "first_started": seen.index("started") if "started" in seen else -1,
            "shipped": [e.fields() for e in store.recorded(Shipped)],
            "statuses": {rid: r.status for rid, r in rollouts.items()},
            "errors": {rid: r.error for rid, r in rollouts.items() if r.error},
            "grade": {rid: v.status for rid, v in grade.items()},
            "infra": [e.message for e in store.recorded(Infra)],
            "landed": landed,
            "interrupted": result.interrupted,
        }), flush=True)
    finally:
        import ray

        ray.shutdown()  # where the run failed before it could disconnect (it disconnects from a cluster it joined)
        cluster.shutdown()
        for image in engine.images.list(name="agentbon/task"):
            if image.id not in before:
                engine.images.remove(image.id, force=True)


if __name__ == "__main__":
    main()
