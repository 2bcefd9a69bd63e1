"""Orchestration figures: overhead per rollout beyond the sandbox's own work, agentbon rollouts/s as a ratio
to the Docker engine's bare container throughput at the same concurrency, and resume after ``kill -9``.

    python benchmarks/orchestrate_bench.py [--rollouts 24] [--concurrency 2] [--rounds 2] [--no-kill9]

The batch uses the real Docker backend and the real Ray driver with the fake model and agent from
``agentbon.testing`` on a trivial task (one model call, one file written, ``git diff``), verification by
the fake verifier (no container), so the rollout pipeline is what is measured. The bare baseline does
create / start / exec / remove with the docker SDK in a thread pool of the same size. Both run
alternately in the same process, ``--rounds`` times. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentbon.config import RunConfig, load_config
from agentbon.orchestrate import Factories, run_batch
from agentbon.sandbox import DockerBackend, docker_client
from agentbon.store import RunStore
from agentbon.testing import FakeAgent, FakeSelector, FakeService, FakeVerifier, init_repo, no_report, planned_model
from agentbon.types import RepoSource, Task, TestSet


def trivial_task(root: Path) -> Task:
    commit = init_repo(root / "repo", {"README.md": "hello\n", "NONCE": uuid.uuid4().hex})
    return Task(task_id="trivial", problem_statement="write an answer", repo=RepoSource(url=str(root / "repo"), base_commit=commit),
                grade=TestSet(command="true"))


def factories(default: str = "nope") -> Factories:
    return Factories(agent=FakeAgent, model=functools.partial(planned_model, default=default), verifier=FakeVerifier,
                     selector=FakeSelector, server=FakeService, report=no_report)


def config(root: Path, n: int, concurrency: int, run_id: str) -> RunConfig:
    return load_config(overrides=[f"run_dir={root / 'runs'}", "select.selectors=[first]", "model.name=fake",
                                  "sandbox.memory=256m"], n=n, concurrency=concurrency, run_id=run_id)


def bare(image: str, rollouts: int, concurrency: int, cfg: RunConfig, run: str) -> float:
    """Containers per second: create, start, exec, remove, ``concurrency`` at a time."""
    client = docker_client()

    def one(_: int) -> None:
        c = client.containers.create(image, entrypoint=["sleep"], command=["infinity"], labels={"agentbon": "1", "agentbon.run": run},
                                     network_mode="none", nano_cpus=int(cfg.sandbox.cpus * 1e9), mem_limit=cfg.sandbox.memory,
                                     pids_limit=cfg.sandbox.pids, init=True)
        c.start()
        c.exec_run(["true"])
        c.remove(force=True)

    t0 = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(rollouts)))
    return rollouts / (time.monotonic() - t0)


def direct(task: Task, rollouts: int, concurrency: int, cfg: RunConfig, run: str) -> float:
    """Rollouts per second doing a rollout's sandbox work (open, write a file, diff, close) without Ray or agentbon."""
    backend = DockerBackend(cfg.sandbox)
    backend.prepare(task)

    def one(i: int) -> None:
        with backend.open(task, {"run": run, "rollout": f"trivial/{i}"}) as box:
            box.write_file("answer.txt", "nope\n")
            box.diff()

    t0 = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(one, range(rollouts)))
    return rollouts / (time.monotonic() - t0)


def agentbon(task: Task, root: Path, rollouts: int, concurrency: int) -> dict[str, float]:
    run_id = f"bench-{uuid.uuid4().hex[:6]}"
    result = run_batch([task], config(root, rollouts, concurrency, run_id), factories=factories())
    store = RunStore(result.path)
    events = list(store.events())
    start = next(e["ts"] for e in events if e["type"] == "start")
    last = max(e["ts"] for e in events if e["type"] == "rollout")
    rs = list(store.rollouts().values())
    window = last - start
    sandbox = statistics.mean(r.timings.sandbox_s for r in rs)
    return {
        "rollouts_per_s": rollouts / window, "wall_s": result.wall_s, "window_s": window,
        "slot_s_per_rollout": window * concurrency / rollouts, "sandbox_s": sandbox,
        "overhead_s": window * concurrency / rollouts - sandbox,
        "worker_overhead_s": statistics.mean(r.timings.wall_s - r.timings.sandbox_s for r in rs),
    }


def kill9(root: Path, rollouts: int, concurrency: int) -> dict[str, int]:
    """Kill -9 a driver mid-run, resume here: rollouts lost, duplicated, and containers left over."""
    run_id = f"k9-{uuid.uuid4().hex[:6]}"
    child = subprocess.Popen([sys.executable, __file__, "--child", str(root), run_id, str(rollouts), str(concurrency)],
                             start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    log = root / "runs" / run_id / "events.jsonl"
    while not log.exists() or log.read_text().count('"type": "rollout"') < rollouts // 3:
        time.sleep(0.1)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    _end_group(child.pid)
    before = log.read_text().count('"type": "rollout"')
    leftover_at_kill = len(docker_client().containers.list(all=True, filters={"label": f"agentbon.run={run_id}"}))
    run_batch([trivial_task_of(root)], config(root, rollouts, concurrency, run_id), factories=factories("nope sleep:1"))
    counts = RunStore(root / "runs" / run_id).rollout_counts()
    return {
        "recorded_before_kill": before, "containers_alive_after_kill": leftover_at_kill,
        "lost": sum(1 for i in range(rollouts) if f"trivial/{i}" not in counts),
        "duplicated": sum(c - 1 for c in counts.values()),
        "containers_left_after_resume": len(docker_client().containers.list(all=True, filters={"label": f"agentbon.run={run_id}"})),
    }


def trivial_task_of(root: Path) -> Task:
    return Task.model_validate_json((root / "task.json").read_text())


def _end_group(pgid: int) -> None:
    # A SIGKILLed driver leaves Ray's agents of its local instance behind: end them, pid by pid.
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    os.kill(int(entry.name), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rollouts", type=int, default=24)
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--no-kill9", action="store_true")
    p.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        root, run_id, n, k = Path(a.child[0]), a.child[1], int(a.child[2]), int(a.child[3])
        run_batch([trivial_task_of(root)], config(root, n, k, run_id), factories=factories("nope sleep:1"))
        return
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    import ray

    slots = {"agentbon_sandbox": a.concurrency, "agentbon_verify": a.concurrency}
    ray.init(address="local", resources=slots, include_dashboard=False, log_to_driver=False)
    root = Path(tempfile.mkdtemp(prefix="agentbon-bench-"))
    task = trivial_task(root)
    (root / "task.json").write_text(task.model_dump_json())
    image = DockerBackend(load_config().sandbox).prepare(task)
    cfg = config(root, a.rollouts, a.concurrency, "x")
    print(f"trivial task image {image}; {a.rollouts} rollouts per measure, concurrency {a.concurrency}, {os.cpu_count()} CPUs")
    agentbon(task, root, a.concurrency * 2, a.concurrency)  # warm-up: Ray workers, clients, image memo
    bare(image, a.concurrency * 2, a.concurrency, cfg, "bench-bare")
    rows = []
    for i in range(a.rounds):
        b = bare(image, a.rollouts, a.concurrency, cfg, "bench-bare")
        d = direct(task, a.rollouts, a.concurrency, cfg, "bench-direct")
        m = agentbon(task, root, a.rollouts, a.concurrency)
        rows.append((b, m, d))
        print(f"round {i + 1}: bare docker {b:.2f} containers/s | same sandbox work without agentbon {d:.2f}/s | "
              f"agentbon {m['rollouts_per_s']:.2f} rollouts/s (ratio to bare {m['rollouts_per_s'] / b:.2f}, to direct "
              f"{m['rollouts_per_s'] / d:.2f}); per rollout: slot {m['slot_s_per_rollout']:.2f}s, "
              f"sandbox {m['sandbox_s']:.2f}s, orchestration overhead {m['overhead_s']:.3f}s "
              f"(in-worker {m['worker_overhead_s']:.3f}s); batch wall {m['wall_s']:.1f}s")
    ratio = statistics.median(m["rollouts_per_s"] / b for b, m, _ in rows)
    vs_direct = statistics.median(m["rollouts_per_s"] / d for _, m, d in rows)
    overhead = statistics.median(m["overhead_s"] for _, m, _ in rows)
    print(f"median ratio agentbon/bare docker: {ratio:.2f} (target >= 0.7); agentbon/direct sandbox work: {vs_direct:.2f}; "
          f"median orchestration overhead per rollout: {overhead * 1000:.0f} ms")
    if not a.no_kill9:
        print("kill -9 then resume:", json.dumps(kill9(root, a.rollouts, a.concurrency)))
    ray.shutdown()


if __name__ == "__main__":
    main()
