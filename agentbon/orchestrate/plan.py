"""The planner: which rollouts and verifications a run still needs, given what the store already holds.

Resume rules (docs/architecture.md): a rollout is finished once its latest record is anything but
``infra_error`` / ``cancelled``; finished rollouts never run again; raising N adds only the new
indices; a finished rollout missing a verdict in some role (or holding an ``infra_error`` verdict)
is verified again; a migration task that already has a passing candidate skips its remaining
rollouts when early stop is on, except those of the fixed part (index < ``run.early_stop_fixed``), which
always run (docs/estimators.md).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from agentbon.config import RunConfig
from agentbon.store import RunStore
from agentbon.types import Role, Rollout, RolloutSpec, Task, Verdict, rollout_id_of

ROLES: tuple[Role, ...] = ("evidence", "grade")


def derive_seed(base: int, task_id: str, index: int) -> int:
    """A stable per-rollout seed from (config seed, task id, index); 31 bits so every server accepts it."""
    digest = hashlib.sha256(f"{base}:{task_id}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def roles_missing(rollout: Rollout, verdicts: dict[Role, dict[str, Verdict]]) -> list[Role]:
    """The roles a finished rollout still needs a usable verdict in."""
    missing: list[Role] = []
    for role in ROLES:
        v = verdicts[role].get(rollout.rollout_id)
        if v is None or v.status == "infra_error":
            missing.append(role)
    return missing


def early_stopped(task: Task, config: RunConfig, grade: dict[str, Verdict], rollout_ids: set[str]) -> bool:
    """True when a migration task already has a passing candidate and early stop is on."""
    if not (config.early_stop and task.evidence_is_grade):
        return False
    return any(grade[r].status == "pass" for r in rollout_ids if r in grade)


@dataclass
class Plan:
    """What is left to do for a run."""

    specs: list[RolloutSpec] = field(default_factory=list)
    """Rollouts to run, task-major (all of a task's rollouts together: shared prefix, early stop)."""
    verify: list[Rollout] = field(default_factory=list)
    """Finished rollouts missing a verdict."""
    finished: dict[str, Rollout] = field(default_factory=dict)
    """Every finished rollout in the store (kept as it is)."""
    skipped: dict[str, list[str]] = field(default_factory=dict)
    """Rollouts not run because their task already passed (early stop), by task."""
    stopped: set[str] = field(default_factory=set)
    """Tasks that already passed with early stop on (their fixed part may still have rollouts to run)."""


def plan_run(tasks: list[Task], config: RunConfig, store: RunStore, run_id: str) -> Plan:
    """Plan rollouts ``0..n-1`` of every task (under a budget, ``0..budget_first-1``), leaving out what the store
    already finished."""
    recorded = store.rollouts()
    verdicts: dict[Role, dict[str, Verdict]] = {role: store.verdicts(role) for role in ROLES}
    plan = Plan()
    for task in tasks:
        done = {rid: r for rid, r in recorded.items() if r.task_id == task.task_id and r.finished}
        plan.finished.update(done)
        plan.verify.extend(r for r in done.values() if roles_missing(r, verdicts))
        stopped = early_stopped(task, config, verdicts["grade"], set(done))
        if stopped:
            plan.stopped.add(task.task_id)
        # Under a batch budget only the first allotment is planned; the allocator gives out the rest as it goes.
        planned = config.fixed_part() if config.budget else config.n
        for i in range(planned):
            rid = rollout_id_of(task.task_id, i)
            if rid in done:
                continue
            if stopped and i >= config.fixed_part():
                plan.skipped.setdefault(task.task_id, []).append(rid)
                continue
            plan.specs.append(make_spec(config, run_id, task.task_id, i))
    return plan


def make_spec(config: RunConfig, run_id: str, task_id: str, index: int) -> RolloutSpec:
    """Rollout ``index`` of a task: its seed derives from the config's seed, the task and the index."""
    return RolloutSpec(
        run_id=run_id, task_id=task_id, index=index, seed=derive_seed(config.model.seed, task_id, index),
        model=config.model.name, agent=config.agent.type,
    )  # fmt: skip
