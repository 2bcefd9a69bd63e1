"""A two-node Ray cluster on this machine; the worker node is killed mid-run (for test_multi_node.py).

Usage: python two_node.py ROOT. The head and a worker node each declare 2 sandbox slots. Every rollout holds
until a gate file exists, so that four sandboxes are live at once whatever the machine's load (two on each
node); then the worker node is removed without grace and the gate opened. Prints one JSON line: the worker's
node id and the run's infra events.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import ray  # noqa: E402
from orch_support import config, fakes, make_tasks  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

from agentbon.orchestrate import run_batch  # noqa: E402
from agentbon.orchestrate.events import Infra  # noqa: E402
from agentbon.store import RunStore  # noqa: E402
from agentbon.testing import FakeBackend  # noqa: E402


def main() -> None:
    root = Path(sys.argv[1])
    cluster = Cluster(
        initialize_head=True,
        head_node_args={"num_cpus": 1, "resources": {"agentbon_sandbox": 2, "agentbon_verify": 2}, "include_dashboard": False},
    )
    worker = cluster.add_node(num_cpus=1, resources={"agentbon_sandbox": 2})
    cluster.wait_for_nodes()
    killed: dict[str, float] = {}

    gate = root / "gate"

    def kill_worker_mid_run() -> None:
        backend = FakeBackend(root=root / "sandboxes")
        deadline = time.time() + 500  # a bound, not a timing: the held rollouts get there on any machine
        while len(backend.live()) < 4 and time.time() < deadline:
            time.sleep(0.1)
        if len(backend.live()) >= 4:
            cluster.remove_node(worker, allow_graceful=False)
            killed["at"] = time.time()
        gate.touch()

    threading.Thread(target=kill_worker_mid_run, daemon=True).start()
    tasks = make_tasks(root, ["a", "b", "c"])
    cfg = config(root, n=4, run_id="r", ray_address=cluster.address)
    result = run_batch(tasks, cfg, factories=fakes(root, {"b/1": f"FIX hold:{gate}"}, default=f"nope hold:{gate}"))
    store = RunStore(result.path)
    print(json.dumps({
        "worker": worker.node_id, "killed": "at" in killed, "interrupted": result.interrupted,
        "infra": [e.fields() for e in store.recorded(Infra)], "counts": store.rollout_counts(),
        "statuses": sorted({r.status for r in store.rollouts().values()}),
        "still_connected": ray.is_initialized(),
    }), flush=True)
    cluster.shutdown()


if __name__ == "__main__":
    main()
