"""Predictions as finished rollouts: written into the run store before the driver plans, so that it verifies them.

A prediction becomes rollout 0 of its task, ``submitted`` with ``exit_status="Prediction"`` and the patch as
given (recorded in the event log only: the patch is stored once), with an ``undecided`` evidence verdict beside it: eval grades, it selects nothing, so only the grade
runs (the task itself is left as it is, so the guard protects the same files as in ``agentbon run``). The planner never runs a finished rollout again and verifies only what lacks a verdict, so a second
invocation on the same run grades only what is left (resume). A prediction whose patch differs from the one
already recorded for its task in that run is refused: its old verdict would be reported for a new patch.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeVar

from agentbon.errors import ConfigError
from agentbon.evaluate.predictions import InputError, Prediction
from agentbon.export.common import as_patch_file
from agentbon.store import RunStore
from agentbon.types import Rollout, Timings, Verdict, patch_hash

EXIT_STATUS = "Prediction"
"""``Rollout.exit_status`` of a rollout made from a prediction (no agent ran)."""
ISOLATION = "none (prediction)"
"""``Rollout.isolation`` of a prediction: it was made elsewhere, in no sandbox of this run."""


def prediction_rollout(run_id: str, task_id: str, patch: str, index: int = 0, exit_status: str = EXIT_STATUS) -> Rollout:
    """The finished rollout record standing for one prediction (rollout ``index`` of its task, no time spent)."""
    return Rollout(
        run_id=run_id, task_id=task_id, index=index, status="submitted", exit_status=exit_status,
        patch=as_patch_file(patch), timings=Timings(), isolation=ISOLATION,
    )


NO_EVIDENCE = "agentbon eval grades only: no selection evidence is run"


def evidence_verdict(rollout: Rollout) -> Verdict:
    """The evidence verdict a prediction gets without running anything (the planner then verifies only the grade)."""
    return Verdict(
        run_id=rollout.run_id, task_id=rollout.task_id, rollout_id=rollout.rollout_id, role="evidence",
        status="undecided", patch_hash=patch_hash(rollout.patch), reason=NO_EVIDENCE,
    )


T = TypeVar("T")


def held_otherwise(store: RunStore, candidates: Iterable[tuple[str, str, T]]) -> list[T]:
    """The items of ``candidates`` (rollout id, patch, item) whose rollout the run already holds with another patch:
    its verdict would be reported for the new patch (an eval's prediction, an ensemble's slot)."""
    recorded = store.rollouts() if store.path.exists() else {}
    return [
        item for rid, patch, item in candidates
        if (before := recorded.get(rid)) is not None and patch_hash(before.patch) != patch_hash(patch)
    ]  # fmt: skip


def conflicts(store: RunStore, graded: dict[str, Prediction], file: str) -> list[InputError]:
    """An error for each prediction whose task already holds a different patch in this run."""
    return [
        InputError(
            file=file, line=p.line, key="model_patch", instance_id=tid,
            problem=f"differs from the patch run {store.run_id} already holds for {tid!r} (graded with that one); use "
            "another --run-id to grade this one",
        )
        for tid, p in held_otherwise(store, ((f"{tid}/0", p.model_patch, (tid, p)) for tid, p in graded.items()))
    ]  # fmt: skip


def unfinished(store: RunStore, rollout_ids: list[str]) -> bool:
    """Whether any of ``rollout_ids`` is not recorded finished in ``store`` or lacks a verdict the driver would run."""
    if not store.path.exists():
        return bool(rollout_ids)
    from agentbon.orchestrate.plan import ROLES, roles_missing

    recorded = store.rollouts()
    verdicts = {role: store.verdicts(role) for role in ROLES}
    return any(
        (r := recorded.get(rid)) is None or not r.finished or roles_missing(r, verdicts) for rid in rollout_ids
    )


@dataclass
class Seeder:
    """The ``run_batch`` hook that writes the predictions' rollouts (under the run's lock, before the driver)."""

    run_id: str
    graded: dict[str, Prediction]
    written: list[str] = field(default_factory=list)
    """Task ids whose rollout this invocation wrote (the others were recorded by an earlier one)."""

    def __call__(self, store: RunStore) -> None:
        changed = [str(e.instance_id) for e in conflicts(store, self.graded, "")]
        if changed:  # another process wrote them since the check: nothing is written
            raise ConfigError(f"{store.path}: predictions for {', '.join(changed)} differ from those recorded")
        recorded, evidence = store.rollouts(), store.verdicts("evidence")
        for tid, p in self.graded.items():
            rollout = recorded.get(f"{tid}/0")
            if rollout is None or not rollout.finished:
                rollout = prediction_rollout(self.run_id, tid, p.model_patch)
                # The event alone (the run's source of truth), no patch.diff or rollout.json beside it: each patch
                # is stored once in the run directory (a large predictions file would otherwise triple there).
                store.append("rollout", rollout)
                self.written.append(tid)
            if rollout.rollout_id not in evidence:
                store.save_verdict(evidence_verdict(rollout))
