"""Chaos benchmark: a real batch (Docker sandboxes, local Ray, the bash agent, the test verifier) with faults
injected while it runs, then resumed where it did not complete. Prints what survived; asserts nothing.

    python benchmarks/chaos_bench.py [--tasks 3] [--n 4] [--seed 0]
        [--faults container,worker,http500,timeout,drop,disk,prepare,open,judge,server-start] [--engine-restart]
        [--infra-retries 2] [--keep-run]

Only the model is scripted: a real HTTP server on 127.0.0.1 (``agentbon.testing.http.ScriptedServer``) that the
real ``OpenAIClient`` talks to. It knows every rollout from the seed agentbon sends with each call, and answers
each one a correct fix, a wrong fix or malformed replies, chosen from ``--seed``, so every rollout's outcome is
known in advance. The faults (docs/chaos.md) fire at a target rollout's second model call, from a controller
thread (``chaos_faults.py``), or outside the agent's loop: a task's preparation, a sandbox's start, the critic's judge
call, the model server's start. Figures: rollouts planned / finished / lost (no final record) / duplicated
(more than one final record) / misclassified (an outcome other than the scripted one, or an infra error no
injected fault explains) / selections made and left (a selection failed on infrastructure: resumable) / containers
leaked (the run's label, after the run) / completed.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import shutil
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from itertools import zip_longest
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import chaos_faults  # noqa: E402
from chaos_faults import (  # noqa: E402
    ALL_FAULTS,
    ROLLOUT_FAULTS,
    Chaos,
    ChaosBackend,
    ChaosService,
    Injection,
    injections_in,
)

from agentbon.agent import SUBMIT_COMMAND  # noqa: E402
from agentbon.agent.base import call_seed  # noqa: E402
from agentbon.config import RunConfig, load_config  # noqa: E402
from agentbon.orchestrate import Factories, derive_seed, run_batch  # noqa: E402
from agentbon.store import RunStore  # noqa: E402
from agentbon.testing import init_repo  # noqa: E402
from agentbon.testing.http import FAULTS, ScriptedServer  # noqa: E402
from agentbon.types import RepoSource, Task, TestSet  # noqa: E402

MODEL = "chaos-scripted"
KINDS = ("pass", "fail", "pass", "malformed", "fail", "pass")
"""What the scripted model does in a rollout; rotated by ``--seed``."""
EXPECTED = {"pass": ("submitted", "pass"), "fail": ("submitted", "fail"), "malformed": ("format_error", "fail")}
"""Each kind's recorded status and grade verdict."""
TIMEOUT_S = 6.0
"""The client's request timeout (``model.timeout_s``); a ``timeout`` fault holds a request longer."""
WINDOW_S = 5.0
"""How long the server answers 500s (or drops connections): longer than the client's 4 tries take."""
STEPS = 12
DEFAULT_FAULTS = "container,worker,http500,timeout,drop,disk,prepare,open,judge,server-start"


def bash(command: str) -> str:
    return f"THOUGHT: next step.\n\n```bash\n{command}\n```\n"


def make_task(root: Path, k: int) -> Task:
    """A one-function repository whose pytest test fails until ``- 1`` goes; graded in the base image."""
    name = f"ops{k}"
    files = {
        f"{name}.py": f"def scale(x):\n    return x * {k + 2} - 1\n\n\ndef keep(x):\n    return x\n",
        f"test_{name}.py": f"from {name} import keep, scale\n\n\ndef test_scale():\n    assert scale(3) == {3 * (k + 2)}\n\n\n"
                           "def test_keep():\n    assert keep(4) == 4\n",
        "README.md": f"chaos task {name} {uuid.uuid4().hex[:8]}\n",
    }  # fmt: skip
    commit = init_repo(root / name, files)
    return Task(
        task_id=f"chaos-{name}", kind="migration", evidence_is_grade=True,
        problem_statement=f"scale() in {name}.py is off by one: scale(x) must be x * {k + 2}.",
        repo=RepoSource(url=str(root / name), base_commit=commit),
        grade=TestSet(fail_to_pass=[f"test_{name}.py::test_scale"], pass_to_pass=[f"test_{name}.py::test_keep"]),
    )  # fmt: skip


@dataclass
class Plan:
    """Every rollout's scripted behaviour and the faults aimed at it, fixed before the run."""

    kinds: dict[str, str] = field(default_factory=dict)
    targets: dict[str, list[str]] = field(default_factory=dict)
    prepare: list[str] = field(default_factory=list)
    """Tasks whose first preparation fails (``prepare``)."""
    replies: dict[str, list[str]] = field(default_factory=dict)
    calls: dict[int, str] = field(default_factory=dict)
    """Call seed -> rollout id: how the server knows who is asking (agentbon seeds each call from the rollout's
    seed and the call's number); the step is the number of assistant turns in the request."""

    @classmethod
    def build(cls, tasks: list[Task], n: int, seed: int, faults: list[str], fill_mb: int) -> Plan:
        plan, rng = cls(), random.Random(seed)
        order = [(t, i) for t in tasks for i in range(n)]
        for g, (task, i) in enumerate(order):
            rid = f"{task.task_id}/{i}"
            plan.kinds[rid] = KINDS[(g + seed) % len(KINDS)]
            for step in range(STEPS):
                plan.calls[call_seed(derive_seed(seed, task.task_id, i), step)] = rid
        # Targets spread evenly over the run's order (rollouts run task-major), server faults alternating with
        # the others, so that one fault window rarely overlaps the next; the seed shifts which rollouts.
        eligible = [rid for rid, kind in plan.kinds.items() if kind != "malformed"]
        if "prepare" in faults:
            plan.prepare.append(rng.choice(tasks).task_id)
        server = [f for f in faults if f in FAULTS]
        other = [f for f in faults if f not in FAULTS and f in ROLLOUT_FAULTS]
        rng.shuffle(server)
        rng.shuffle(other)
        ordered = [f for pair in zip_longest(server, other) for f in pair if f]
        gap, offset = len(eligible) / max(len(ordered), 1), rng.randrange(len(eligible))
        for j, fault in enumerate(ordered):
            plan.targets.setdefault(eligible[(offset + int(j * gap)) % len(eligible)], []).append(fault)
        for task, i in order:
            rid, module = f"{task.task_id}/{i}", task.task_id.removeprefix("chaos-") + ".py"
            kind = plan.kinds[rid]
            look = f"cat {module}"
            if "disk" in plan.targets.get(rid, []):  # the sandbox's own tmpfs to ENOSPC, then a big write
                look = (
                    f"dd if=/dev/zero of=/dev/shm/fill bs=1M count=256 2>&1 | tail -n 4; df -h /dev/shm | tail -n 1; "
                    f"dd if=/dev/zero of=/tmp/fill bs=1M count={fill_mb} 2>&1 | tail -n 1; {look}"
                )
            fix = {"pass": f"sed -i 's/ - 1$//' {module}", "fail": f"sed -i 's/ - 1$/ + 1/' {module}"}.get(kind)
            plan.replies[rid] = (
                [bash(look), bash(f"{fix} && cat {module}"), bash(SUBMIT_COMMAND)]
                if fix
                else ["I would change the function, but I will not run a command."]
            )
        return plan

    def locate(self, seed: int | None) -> str | None:
        """The rollout a request with this seed belongs to."""
        return self.calls.get(seed) if seed is not None else None

    def reply(self, body: dict[str, Any]) -> str:
        rid = self.locate(body.get("seed"))
        if rid is None:
            return bash(SUBMIT_COMMAND)
        step = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        return self.replies[rid][min(step, len(self.replies[rid]) - 1)]


def config(
    root: Path, url: str, n: int, seed: int, run_id: str, retries: int, faults: list[str], start: bool = False
) -> RunConfig:
    """The run's config. ``judge``: the critic is the LLM judge (asking the scripted server) and the ``critic``
    selector scores every candidate with it; ``start``: agentbon starts the model server (``ChaosService``) instead of
    being given the endpoint (without the judge: that invocation's server dies while it starts, so nothing is
    selected there, and the judge fault's window is timed against the scripted server the other invocations use)."""
    judge = "judge" in faults and not start
    selectors = "[tests-then-critic,critic,oracle]" if judge else "[tests-then-critic,oracle]"
    endpoint = "model.launcher=llama-cpp" if start else f"model.endpoint={url}"
    overrides = [
        f"run_dir={root / 'runs'}", "agent.type=bash", endpoint, f"model.name={MODEL}",
        f"model.timeout_s={TIMEOUT_S}", "model.retries=3", f"model.seed={seed}", "model.top_p=0.95",
        "agent.malformed_limit=2",
        "early_stop=false", "sandbox.memory=512m", f"select.selectors={selectors}", f"infra_retries={retries}",
        *(["select.critic=judge"] if judge else []),
    ]  # fmt: skip
    return load_config(overrides=overrides, n=n, concurrency=2, run_id=run_id)


def factories(plan: Plan, faults: list[str], url: str, folder: Path, start: bool = False) -> Factories | None:
    """The default factories, with the backend's faults where asked, and with ``start`` a model server that dies
    while it starts, once (``chaos_faults.py``)."""
    if not ({"prepare", "open"} & set(faults) or start):
        return None
    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(chaos_faults)  # Ray workers need not import the benchmark's modules
    opened = tuple(rid for rid, f in plan.targets.items() if "open" in f)
    backend = functools.partial(ChaosBackend, folder=str(folder), prepare=tuple(plan.prepare), open=opened)
    if not start:
        return Factories(backend=backend)
    server = functools.partial(ChaosService, server_url=url, folder=str(folder), fail_start=True)
    return Factories(backend=backend, server=server)


def leaked(run_id: str) -> list[str]:
    from agentbon.sandbox import docker_client

    return [c.name for c in docker_client().containers.list(all=True, filters={"label": f"agentbon.run_id={run_id}"})]


def figures(store: RunStore, plan: Plan, log: list[Injection], server: ScriptedServer, run_id: str) -> dict[str, Any]:
    """The run's figures from its store, the injection log and the server's log of faulted requests."""
    records, grade, evidence = store.rollouts(), store.verdicts("grade"), store.verdicts("evidence")
    injected: dict[str, set[str]] = {rid: {"disk"} & set(f) for rid, f in plan.targets.items()}
    for inj in log:
        for rid in inj.hit:
            injected.setdefault(rid, set()).add(inj.fault)
    for req in server.faulted():
        owner = plan.locate(req.seed)
        if owner:
            injected.setdefault(owner, set()).add(req.fault)
    wrong: list[str] = []
    finished = 0
    for rid, kind in plan.kinds.items():
        r = records.get(rid)
        if r is None or not r.finished:
            continue
        g, e = grade.get(rid), evidence.get(rid)
        verified = g is not None and g.status != "infra_error" and e is not None and e.status != "infra_error"
        finished += verified
        status, verdict = EXPECTED[kind]
        if r.status != status or (verified and g is not None and g.status != verdict):
            wrong.append(
                f"{rid}: scripted {kind}, recorded {r.status} ({r.exit_status}: {(r.error or '')[:120]}), "
                f"grade {g.status if g else None}; faults injected: {sorted(injected.get(rid, set())) or 'none'}"
            )

    def explained(ev: dict[str, Any]) -> bool:
        at, rid = ev.get("ts", 0.0), ev.get("rollout_id")
        if any(i.at <= at <= i.until for i in log):  # the engine restart: everything in its window
            return True
        if ev.get("unit") == "rollout":
            return bool(rid and injected.get(rid))
        prepare = ev.get("unit") == "prepare"  # only a preparation fault explains a preparation's failure
        return any(ev.get("task_id") in i.tasks and i.at <= at and (i.fault == "prepare") == prepare for i in log)

    for ev in list(store.events("infra")):
        if not explained(ev):
            wrong.append(
                f"{ev.get('rollout_id') or ev.get('task_id')}: {ev.get('unit')} infra {ev.get('error')} on "
                f"attempt {ev.get('attempt')} with no fault injected ({str(ev.get('message', ''))[:120]})"
            )
    judged = [i.at for i in log if i.fault == "judge"]
    for ev in list(store.events("selector_error")):
        if not ev.get("infra"):  # the scripted judge always answers: a failure is never the critic's own answer
            wrong.append(f"{ev['task_id']}: {ev['selector']} failed as its own outcome: {ev['error'][:120]}")
        elif not any(at <= ev["ts"] for at in judged):
            wrong.append(f"{ev['task_id']}: {ev['selector']} failed on infrastructure, no fault injected: "
                         f"{ev['error'][:120]}")  # fmt: skip
    counts = store.rollout_counts()
    final = {rid for rid in plan.kinds if rid in records and records[rid].finished}
    failed, unprepared = store.selector_failures(), store.prepare_failures()
    made = {(s.task_id, s.selector) for s in store.selections()} - set(failed)
    wanted = {(rid.rsplit("/", 1)[0], name) for rid in plan.kinds for name in store.config_data()["select"]["selectors"]}
    return {
        "planned": len(plan.kinds), "finished": finished,
        "left_infra": sum(1 for rid in plan.kinds if rid in records and not records[rid].finished)
        + sum(1 for rid in plan.kinds if rid not in records and rid.rsplit("/", 1)[0] in unprepared),
        "lost": len(plan.kinds) - len(final), "duplicated": sum(c - 1 for c in counts.values() if c > 1),
        "misclassified": wrong, "leaked": leaked(run_id),
        "completed": finished == len(plan.kinds) and wanted <= made,
        "infra_events": len(list(store.events("infra"))),
        "selections": len(wanted), "selected": len(wanted & made), "selections_left": len(set(failed) & wanted),
        "selections_lost": len(wanted - made - set(failed)),
    }  # fmt: skip


def show(title: str, f: dict[str, Any], wall_s: float) -> None:
    print(
        f"{title}: {wall_s:.0f}s | planned {f['planned']} | finished {f['finished']} | lost {f['lost']} "
        f"(of which {f['left_infra']} left on infrastructure, resumable) | duplicated {f['duplicated']} | "
        f"misclassified {len(f['misclassified'])} | selections {f['selected']}/{f['selections']} "
        f"(left {f['selections_left']} on infrastructure, resumable; lost {f['selections_lost']}) | "
        f"containers leaked {len(f['leaked'])} | infra events {f['infra_events']} | "
        f"completed {'yes' if f['completed'] else 'no'}"
    )
    for line in f["misclassified"]:
        print(f"    misclassified: {line}")
    if f["leaked"]:
        print(f"    leaked: {', '.join(f['leaked'])}")


def targets_report(
    store: RunStore, plan: Plan, log: list[Injection], server: ScriptedServer, fired: set[tuple[str, str]]
) -> None:
    """Each injection, the rollouts it reached, and what the store recorded for them."""
    records = store.rollouts()
    events = list(store.events("infra"))
    log = list(log)
    for rid, faults in plan.targets.items():
        if "disk" in faults:
            log.append(Injection("disk", rid, 0.0, "the scripted step 0 fills /dev/shm, writes /tmp/fill", hit=[rid]))
        for fault in faults:
            if fault not in ("disk", "open") and (fault, rid) not in fired:
                log.append(
                    Injection(
                        fault,
                        rid,
                        0.0,
                        "never fired: the rollout did not reach its second model call while the faults were on",
                        done=False,
                    )
                )
    for inj in log:
        if inj.fault in FAULTS:  # who the server's fault window reached, and how many of their requests
            got = [plan.locate(r.seed) for r in server.faulted() if r.fault == inj.fault and r.at >= inj.at]
            inj.hit = sorted({rid for rid in got if rid})
            inj.detail += f"; {len(got)} requests got it"
        if inj.fault in ("prepare", "judge", "server-start"):
            seen = outside_seen(store, inj)
        elif inj.target == "verify":
            seen = [
                f"{e['rollout_id']} verify#{e['attempt']}:{e['error']}"
                for e in events
                if e.get("unit") == "verify" and e.get("task_id") in inj.tasks and e["ts"] >= inj.at
            ]
        else:
            seen = []
            for rid in inj.hit:
                r = records.get(rid)
                infra = [
                    f"#{e['attempt']}:{e['error']}"
                    for e in events
                    if e.get("rollout_id") == rid and e["unit"] == "rollout"
                ]
                seen.append(
                    f"{rid} infra[{' '.join(infra)}] final {r.status if r else None} attempt {r.attempt if r else '-'}"
                )
        print(f"  {inj.fault:<16} -> {inj.target:<14} {'ok  ' if inj.done else 'MISS'} {inj.detail[:90]}")
        for line in seen or ["(no infra event)"]:
            print(f"  {'':<16}    {line}")


def outside_seen(store: RunStore, inj: Injection) -> list[str]:
    """What the store recorded of a fault outside the agent: the preparation's attempts, the selections that failed,
    or (for the server's start) nothing: that invocation stopped before any unit."""
    if inj.fault == "prepare":
        events = [e for e in list(store.events("infra")) if e.get("unit") == "prepare" and e.get("task_id") in inj.tasks]
        done = [e["task_id"] for e in list(store.events("prepare_failed"))]
        return [f"{inj.target} prepare#{e['attempt']}:{e['error']} retry={e['retry']}" for e in events] + [
            f"{t} recorded as not prepared" for t in done
        ]
    if inj.fault == "judge":
        errors = list(store.events("selector_error"))
        return [f"{e['task_id']} {e['selector']}: infra={e.get('infra')} {e['error'][:60]}" for e in errors]
    return ["that invocation stopped at the server's start, before any unit (its line above)"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tasks", type=int, default=3)
    p.add_argument("--n", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--faults", default=DEFAULT_FAULTS, help=f"comma list of {', '.join(ALL_FAULTS)}")
    p.add_argument(
        "--engine-restart", action="store_true", help="also restart dockerd mid-run (root; kills every container)"
    )
    p.add_argument("--fill-mb", type=int, default=256, help="MB the disk-fill rollout writes to its container's layer")
    p.add_argument(
        "--infra-retries",
        type=int,
        default=RunConfig().infra_retries,
        help="retries of an infra failure within the run (0: every fault is left for the resume)",
    )
    p.add_argument("--keep-run", action="store_true", help="keep the run directory and task repos")
    a = p.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    faults = [f for f in a.faults.split(",") if f]
    unknown = set(faults) - set(ALL_FAULTS)
    if unknown:
        p.error(f"unknown faults {sorted(unknown)}; choose from {', '.join(ALL_FAULTS)}")
    if "engine" in faults and not a.engine_restart:
        faults.remove("engine")
    if a.engine_restart and "engine" not in faults:
        faults.append("engine")
    root = Path(tempfile.mkdtemp(prefix="agentbon-chaos-"))
    tasks = [make_task(root / "repos", k) for k in range(a.tasks)]
    plan = Plan.build(tasks, a.n, a.seed, faults, a.fill_mb)
    run_id = f"chaos-{uuid.uuid4().hex[:6]}"
    kinds = {k: sum(1 for v in plan.kinds.values() if v == k) for k in EXPECTED}
    print(
        f"{a.tasks} tasks x N={a.n}, seed {a.seed}: scripted {kinds}; faults {', '.join(faults)}; run {run_id}; "
        f"{os.cpu_count()} CPUs"
    )
    if a.engine_restart and os.geteuid() != 0:
        print("  note: --engine-restart needs root; the engine fault will be logged as skipped")
    folder = root / "injections"
    with ScriptedServer(plan.reply, model=MODEL, hang_s=TIMEOUT_S + 2) as server:
        cfg = config(root, server.url, a.n, a.seed, run_id, a.infra_retries, faults)
        made = factories(plan, faults, server.url, folder)
        store = RunStore(Path(cfg.run_dir) / run_id)
        start_wrong: list[str] = []
        if "server-start" in faults:  # invocation 0: agentbon starts the model server, which dies while it starts
            t0 = time.monotonic()
            try:
                starting = config(root, server.url, a.n, a.seed, run_id, a.infra_retries, faults, start=True)
                run_batch(tasks, starting, suite="chaos", factories=factories(plan, faults, server.url, folder, True))
                start_wrong.append("model server start: the run went on although the server died while starting")
            except Exception as e:  # the run stops, with nothing recorded that a resume would not redo
                why = f"{type(e).__name__}: {(str(e).splitlines() or [''])[0][:100]}"
                if type(e).__name__ != "ServerFailure":
                    start_wrong.append(f"model server start failed as {why}, not ServerFailure")
                print(f"model server start (invocation 0, {time.monotonic() - t0:.0f}s): {why}; "
                      f"rollouts recorded {len(store.rollouts())}")  # fmt: skip
        chaos = Chaos(server, run_id, plan.targets, plan.locate, window_s=WINDOW_S, timeout_hang=4,
                      judge="judge" in faults)  # fmt: skip
        server.hooks.append(chaos.hook)
        chaos.start()
        t0 = time.monotonic()
        try:
            result = run_batch(tasks, cfg, suite="chaos", factories=made)
        finally:
            chaos.stop()
            server.hooks.clear()
            server.heal()
        wall = time.monotonic() - t0
        log = chaos.log + injections_in(str(folder))
        print("injections (fault -> target, what was done; then each rollout it reached: infra events, final record):")
        targets_report(store, plan, log, server, chaos.fired)
        first = figures(store, plan, log, server, run_id)
        first["misclassified"] += start_wrong
        show("run under faults", first, wall)
        if not first["completed"]:
            t0 = time.monotonic()
            run_batch(tasks, cfg, suite="chaos", factories=made)  # same run id: resume (each fault fired once)
            again = figures(store, plan, log, server, run_id)
            again["misclassified"] += start_wrong
            show("after resume", again, time.monotonic() - t0)
    if a.keep_run:
        lines = [json.dumps({**asdict(r), "rollout": plan.locate(r.seed)}) for r in server.requests]
        (result.path / "chaos_requests.jsonl").write_text("".join(f"{line}\n" for line in lines))
        print(f"run kept: {result.path} (chaos_requests.jsonl: every model request; repos under {root / 'repos'})")
    else:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
