"""Sandbox throughput: agentbon's rollouts/s end to end (verification included) against the engine's bare
``docker run --rm`` rate, measured in the same run, with engine calls per rollout and the time to the first rollout.

    python benchmarks/throughput_bench.py [--rollouts 32] [--slots 2,4] [--rounds 1]

The model is scripted (``agentbon.testing.http.ScriptedServer``, real HTTP, zero latency): two calls per rollout,
a fix (``sed``; with ``--unique-patches`` also a comment naming the call's seed, so every candidate differs and each one
is verified, where by default the driver verifies the one patch once) and the submit command. One task, a one-line bug in a one-file repository, graded by pytest in the task image.
Each round runs, at each slot count, the bare container rate (``containers.run(image, "true", remove=True)`` from
a thread pool of that size), then agentbon as it ships (resident executor, warm sandboxes, admission control), then
agentbon with one engine exec per command and no warm sandboxes (the way it was before), then agentbon joining a
Ray that is already running (a warm machine: ``--ray-address``; the bench starts that Ray in a helper process of its
own and stops it at the end). Beside the rates it prints the CPU time per rollout and per bare container (the whole
machine's, from ``/proc/stat``, over the same window: on a machine with few cores the comparison is a comparison of
CPU costs) and the containers a run left behind (its label, after it returned, with those the driver's check after
the reap removed: must be 0), and the CPU of the sandbox alone, used as a rollout uses it one after another
with no Ray or model (what bounds the ratio where the CPU is the limit). Prints figures; asserts nothing
(docs/sandboxes.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentbon.agent import SUBMIT_COMMAND
from agentbon.config import RunConfig, load_config
from agentbon.orchestrate import run_batch
from agentbon.sandbox import DockerBackend, docker_client
from agentbon.store import RunStore
from agentbon.testing import init_repo
from agentbon.testing.http import ScriptedServer
from agentbon.types import RepoSource, Task, TestSet

MODEL = "throughput-scripted"


def bash(command: str) -> str:
    return f"THOUGHT: next step.\n\n```bash\n{command}\n```\n"


UNIQUE = False
"""``--unique-patches``: every candidate differs, so none of the verifications is shared."""


def script(body: dict[str, Any]) -> str:
    """First call: fix the bug (with ``--unique-patches``, also a comment naming the call's seed); then submit."""
    step = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    if step == 0:
        mark = f" && echo '# fixed under seed {body.get('seed')}' >> ops.py" if UNIQUE else ""
        return bash(f"sed -i 's/ - 1$//' ops.py{mark}")
    return bash(SUBMIT_COMMAND)


def make_task(root: Path) -> Task:
    files = {
        "ops.py": "def scale(x):\n    return x * 3 - 1\n",
        "test_ops.py": "from ops import scale\n\n\ndef test_scale():\n    assert scale(3) == 9\n",
        "README.md": f"throughput task {uuid.uuid4().hex[:8]}\n",
    }
    commit = init_repo(root / "ops", files)
    return Task(
        task_id="one-bug", kind="migration", evidence_is_grade=True,
        problem_statement="scale() in ops.py is off by one: scale(x) must be x * 3.",
        repo=RepoSource(url=str(root / "ops"), base_commit=commit),
        grade=TestSet(fail_to_pass=["test_ops.py::test_scale"]),
    )  # fmt: skip


class CpuClock:
    """The machine's busy CPU seconds (all cores, from ``/proc/stat``), sampled every 0.1 s in a thread, so that a
    window known only afterwards (first rollout to last verdict) can be measured. Empty where /proc is absent."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @staticmethod
    def busy() -> float | None:
        try:
            fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        except (OSError, ValueError):
            return None
        return (sum(fields) - fields[3] - fields[4]) / 100.0  # less idle and iowait; USER_HZ is 100 on Linux

    def _run(self) -> None:
        while not self._stop.wait(0.1):
            busy = self.busy()
            if busy is not None:
                self.samples.append((time.time(), busy))

    def __enter__(self) -> CpuClock:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def between(self, start: float, end: float) -> float:
        """Busy CPU seconds from the last sample at or before ``start`` to the first at or after ``end``."""
        if not self.samples:
            return float("nan")
        before = [b for t, b in self.samples if t <= start] or [self.samples[0][1]]
        after = [b for t, b in self.samples if t >= end] or [self.samples[-1][1]]
        return after[0] - before[-1]


def bare_rate(image: str, count: int, slots: int) -> dict[str, float]:
    """Containers/s of ``docker run --rm IMAGE true`` from ``slots`` threads, and busy CPU seconds per container."""
    client = docker_client()
    cpu = CpuClock.busy()
    started = time.monotonic()
    with ThreadPoolExecutor(slots) as pool:
        list(pool.map(lambda _: client.containers.run(image, ["true"], remove=True, network_mode="none"), range(count)))
    took = time.monotonic() - started
    after = CpuClock.busy()
    per = (after - cpu) / count if cpu is not None and after is not None else float("nan")
    return {"per_s": count / took, "cpu_s": per}


def sandbox_alone(task: Task, count: int) -> dict[str, float]:
    """Busy CPU seconds per sandbox used the way a rollout uses it, one after another with no Ray, driver or model:
    open (no warm pool), the fix and the submit command through the resident executor, the diff, close. On a
    machine whose CPU is the limit, ``bare cpu_s / this`` bounds agentbon's ratio to the bare rate from above."""
    from agentbon.config import SandboxConfig

    backend = DockerBackend(SandboxConfig(warm=0))
    backend.prepare(task)
    cpu = CpuClock.busy()
    started = time.monotonic()
    for i in range(count):
        with backend.open(task, {"run": f"tput-alone-{uuid.uuid4().hex[:6]}", "rollout": f"one-bug/{i}"}) as sandbox:
            sandbox.exec("sed -i 's/ - 1$//' ops.py")
            sandbox.exec(SUBMIT_COMMAND)
            sandbox.diff()
    took = time.monotonic() - started
    after = CpuClock.busy()
    per = (after - cpu) / count if cpu is not None and after is not None else float("nan")
    return {"cpu_s": per, "per_s": count / took}


class RunningRay:
    """A local Ray started ahead of the runs, in a helper process of its own (as ``ray start --head`` would, but
    stopped with that process rather than by ``ray stop``, which would stop every Ray on the machine)."""

    SCRIPT = (
        "import json, sys, ray\n"
        "info = ray.init(address='local', include_dashboard=False, log_to_driver=False, "
        "resources=json.loads(sys.argv[1]))\n"
        "print(info.address_info['gcs_address'], flush=True)\n"
        "sys.stdin.read()\n"
    )

    def __init__(self, slots: int):
        from agentbon.orchestrate.cluster import SANDBOX, VERIFY

        resources = json.dumps({SANDBOX: slots, VERIFY: slots})
        self.proc = subprocess.Popen([sys.executable, "-c", self.SCRIPT, resources], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # fmt: skip
        assert self.proc.stdout is not None
        self.address = self.proc.stdout.readline().strip()
        if not self.address:
            raise RuntimeError("the helper's Ray did not start")

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(60)


class ProcessCpu:
    """CPU seconds by process group over a window: every process's own time and the time of the children it reaped
    (from ``/proc/PID/stat``), grouped by what the process is. A container's processes are reaped by the machine's
    init once their shim exits, so their time shows as "reaped by init (container processes, shims)". Where the
    groups add up to more than the machine's busy time, children reaped in the window had started before it."""

    GROUPS = (
        ("raylet", "raylet"), ("gcs_server", "Ray GCS"), ("dockerd", "dockerd"), ("containerd-shim", "containerd shims"),
        ("containerd", "containerd"), ("kworker", "kernel workers"), ("ksoftirqd", "kernel workers"),
    )  # fmt: skip

    @staticmethod
    def snapshot() -> dict[int, tuple[str, str, float, float]]:
        out = {}
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                stat = (d / "stat").read_text()
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            comm, fields = stat[stat.index("(") + 1 : stat.rindex(")")], stat[stat.rindex(")") + 2 :].split()
            own, reaped = (int(fields[11]) + int(fields[12])) / 100, (int(fields[13]) + int(fields[14])) / 100
            out[int(d.name)] = (comm, cmd, own, reaped)
        return out

    @classmethod
    def group(cls, pid: int, comm: str, cmd: str) -> str:
        if pid == os.getpid():
            return "this process (driver, scripted model server)"
        if pid == 1:
            return "init"
        if comm.startswith("ray::") or "default_worker" in cmd:
            return "Ray workers (rollouts, verifications, tracker)"
        if "ray" in cmd and "python" in cmd:
            return "Ray's Python services"
        return next((name for prefix, name in cls.GROUPS if comm.startswith(prefix)), "other")

    @classmethod
    def between(cls, a: dict, b: dict) -> dict[str, float]:
        groups: dict[str, float] = {}
        for pid, (comm, cmd, own, reaped) in b.items():
            was = a.get(pid)
            same = was is not None and was[0] == comm
            name = cls.group(pid, comm, cmd)
            groups[name] = groups.get(name, 0.0) + own - (was[2] if same else 0.0)
            child = "reaped by init (container processes, shims)" if name == "init" else f"reaped by {name}"
            groups[child] = groups.get(child, 0.0) + reaped - (was[3] if same else 0.0)
        return groups


def left_behind(run_id: str) -> int:
    """Containers carrying the run's label once it has returned (its reap should have left none)."""
    from agentbon.sandbox.common import label_filters

    filters = {"label": label_filters({"run": run_id})}
    return len(docker_client().containers.list(all=True, filters=filters))


def agentbon_run(
    task: Task, root: Path, url: str, n: int, slots: int, shipped: bool, clock: CpuClock, ray_address: str = ""
) -> dict[str, float]:
    overrides = [
        f"run_dir={root / 'runs'}", "agent.type=bash", f"model.endpoint={url}", f"model.name={MODEL}",
        "early_stop=false", "sandbox.memory=512m", "select.selectors=[tests-then-critic]",
    ]  # fmt: skip
    if not shipped:
        overrides += ["sandbox.executor=exec", "sandbox.warm=0"]
    if ray_address:
        overrides += [f"ray_address={ray_address}"]
    run_id = f"tput-{slots}-{'new' if shipped else 'old'}{'-ray' if ray_address else ''}-{uuid.uuid4().hex[:6]}"
    config: RunConfig = load_config(overrides=overrides, n=n, concurrency=slots, run_id=run_id)
    called = time.time()
    result = run_batch([task], config, suite="throughput")
    store = RunStore(result.path)
    rollouts = [r for r in store.rollouts().values() if r.status != "infra_error"]
    verdicts = list(store.verdicts("grade").values())
    events = list(store.events())
    first = min(r.timings.started_at for r in rollouts)
    last = max(e["ts"] for e in events if e["type"] == "verdict")
    return {
        "cpu_s": clock.between(first, last) / len(rollouts),
        "left": left_behind(run_id) + sum(  # and what the driver's own check after the reap found and removed
            int(e["message"].split()[0]) for e in events if e["type"] == "warning" and "end-of-run reap" in e["message"]
        ),
        "rollouts": len(rollouts),
        "passed": sum(1 for v in verdicts if v.status == "pass"),
        "per_s": len(rollouts) / (last - first),
        "rollout_phase_per_s": len(rollouts) / (max(r.timings.started_at + r.timings.wall_s for r in rollouts) - first),
        "first_rollout_s": first - called,
        "engine_calls": statistics.mean(r.sandbox.engine_calls for r in rollouts),
        "warm": sum(1 for r in rollouts if r.sandbox.warm) / len(rollouts),
        "setup_s": statistics.median(r.timings.setup_s for r in rollouts),
        "wall_s": result.wall_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rollouts", type=int, default=32)
    parser.add_argument("--slots", default="2,4")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--unique-patches", action="store_true", help="make every candidate differ (no shared verdicts)")
    args = parser.parse_args(argv)
    global UNIQUE
    UNIQUE = args.unique_patches
    slots = [int(s) for s in args.slots.split(",")]
    root = Path(tempfile.mkdtemp(prefix="agentbon-tput-"))
    task = make_task(root)
    image = DockerBackend().prepare(task)
    rows: dict[tuple[int, str], list[dict[str, float]]] = {}
    by_process: dict[int, tuple[dict[str, float], float, float]] = {}
    with ScriptedServer(script, model=MODEL) as server, CpuClock() as clock:
        for round_ in range(args.rounds):
            for s in slots:
                rows.setdefault((s, "bare"), []).append(bare_rate(image, args.rollouts, s))
                rows.setdefault((s, "alone"), []).append(sandbox_alone(task, args.rollouts))
                for shipped in (True, False):
                    got = agentbon_run(task, root, server.url, args.rollouts, s, shipped, clock)
                    rows.setdefault((s, "new" if shipped else "old"), []).append(got)
                ray = RunningRay(s)
                try:
                    before, busy = ProcessCpu.snapshot(), CpuClock.busy()
                    got = agentbon_run(task, root, server.url, args.rollouts, s, True, clock, ray.address)
                    after, busy_after = ProcessCpu.snapshot(), CpuClock.busy()
                    rows.setdefault((s, "warm-ray"), []).append(got)
                    if busy is not None and busy_after is not None:
                        by_process[s] = (ProcessCpu.between(before, after), busy_after - busy, got["rollouts"])
                finally:
                    import ray as ray_api

                    ray_api.shutdown()  # where the run failed before it disconnected
                    ray.stop()
                print(f"round {round_ + 1}: {s} slots done", file=sys.stderr)

    def med(s: int, kind: str, key: str) -> float:
        return statistics.median(r[key] for r in rows[(s, kind)])

    patches = "every patch different" if UNIQUE else "one patch, verified once"
    print(f"\n{args.rollouts} rollouts of one task per run ({patches}), {args.rounds} round(s), medians\n")
    print("| | " + " | ".join(f"{s} at a time" for s in slots) + " |")
    print("|---|" + "---|" * len(slots))
    lines = [
        ("bare `docker run --rm` (containers/s)", "bare", "per_s", "{:.2f}"),
        ("agentbon, end to end, verification included (rollouts/s)", "new", "per_s", "{:.2f}"),
        ("agentbon before (exec per command, no warm pool)", "old", "per_s", "{:.2f}"),
        ("agentbon, rollout phase only (rollouts/s)", "new", "rollout_phase_per_s", "{:.2f}"),
        ("agentbon before, rollout phase only", "old", "rollout_phase_per_s", "{:.2f}"),
        ("engine calls per rollout sandbox", "new", "engine_calls", "{:.1f}"),
        ("engine calls per rollout sandbox, before", "old", "engine_calls", "{:.1f}"),
        ("rollouts that got a warm sandbox", "new", "warm", "{:.0%}"),
        ("median sandbox setup seen by a rollout (s)", "new", "setup_s", "{:.3f}"),
        ("median sandbox setup, before (s)", "old", "setup_s", "{:.3f}"),
        ("time to first rollout (s)", "new", "first_rollout_s", "{:.2f}"),
        ("time to first rollout, Ray already running (s)", "warm-ray", "first_rollout_s", "{:.2f}"),
        ("agentbon, Ray already running, end to end (rollouts/s)", "warm-ray", "per_s", "{:.2f}"),
        ("busy CPU s per bare container (whole machine)", "bare", "cpu_s", "{:.3f}"),
        ("busy CPU s per sandbox alone, used as a rollout uses it (no Ray, no model)", "alone", "cpu_s", "{:.3f}"),
        ("busy CPU s per rollout, verification included", "new", "cpu_s", "{:.3f}"),
        ("busy CPU s per rollout, before", "old", "cpu_s", "{:.3f}"),
    ]
    for label, kind, key, fmt in lines:
        print(f"| {label} | " + " | ".join(fmt.format(med(s, kind, key)) for s in slots) + " |")
    left = {kind: sum(r["left"] for (_, k), runs in rows.items() if k == kind for r in runs)
            for kind in ("new", "old", "warm-ray")}  # fmt: skip
    print(f"\ncontainers the runs left behind (must be 0): shipped {left['new']}, before {left['old']}, "
          f"Ray already running {left['warm-ray']}")
    for s in slots:
        cpu = med(s, "new", "cpu_s") / med(s, "bare", "cpu_s")
        bound = med(s, "bare", "cpu_s") / med(s, "alone", "cpu_s")
        print(f"{s} slots: a rollout, verification included, costs {cpu:.1f}x a bare container's CPU; the sandbox "
              f"alone {1 / bound:.1f}x, so where the CPU is the limit no rollout can reach more than {bound:.2f} of "
              "the bare rate")  # fmt: skip
    for s, (groups, busy, count) in by_process.items():
        print(f"\nwhere the CPU went, {s} slots, Ray already running (last round; the machine busy "
              f"{busy / count:.3f} CPU s per rollout, call to return):")
        for name, cpu in sorted(groups.items(), key=lambda g: -g[1]):
            if cpu / count >= 0.005:
                print(f"  {name:55s} {cpu / count:.3f} CPU s per rollout")
    for s in slots:
        ratio = med(s, "new", "per_s") / med(s, "bare", "per_s")
        before = med(s, "old", "per_s") / med(s, "bare", "per_s")
        print(f"\n{s} slots: agentbon / bare = {ratio:.2f} (before: {before:.2f}); "
              f"candidates passing: {med(s, 'new', 'passed'):.0f}/{args.rollouts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
