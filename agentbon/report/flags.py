"""Flags as results: what the verifications flagged, per kind, per task and on the winners (docs/security.md, Flags).

A rollout's flags are those of its evidence and grade verdicts together (a report and an export come after
grading, so the grade may be shown; the selectors themselves see only the evidence). ``Verdict.tampered`` counts
as the ``tampered`` kind, and its paths are what grading undid before the tests ran.
"""

from __future__ import annotations

from typing import get_args

from agentbon.report.data import RunData
from agentbon.report.schema import Flags
from agentbon.types import Flag, FlagKind, Verdict

KINDS: tuple[str, ...] = get_args(FlagKind)
"""Every flag kind, in the order the report lists them."""


def _order(kinds: set[str]) -> list[str]:
    return [k for k in KINDS if k in kinds] + sorted(kinds - set(KINDS))


def verdict_flags(verdict: Verdict) -> list[Flag]:
    """The verdict's flags, with a ``tampered`` flag for a legacy ``tampered`` list that has none."""
    flags = list(verdict.flags)
    if verdict.tampered and not any(f.kind == "tampered" for f in flags):
        flags.append(Flag(kind="tampered", detail="touched protected files", paths=list(verdict.tampered)))
    return flags


def rollout_flags(data: RunData, rollout_id: str) -> list[Flag]:
    """The flags of a rollout's evidence and grade verdicts, each once (a legacy ``tampered`` list included)."""
    out: list[Flag] = []
    for verdict in (data.evidence.get(rollout_id), data.grades.get(rollout_id)):
        out += [f for f in verdict_flags(verdict) if f not in out] if verdict else []
    return out


def rollout_kinds(data: RunData, rollout_id: str) -> list[str]:
    """The kinds flagged on a rollout (either role), in the report's order."""
    return _order({f.kind for f in rollout_flags(data, rollout_id)})


def undone_paths(data: RunData, rollout_id: str) -> list[str]:
    """Files whose changes grading undid before the tests ran (``Verdict.tampered`` of either role), sorted."""
    paths = {p for v in (data.evidence.get(rollout_id), data.grades.get(rollout_id)) if v for p in v.tampered}
    paths |= {p for f in rollout_flags(data, rollout_id) if f.kind == "tampered" for p in f.paths}
    return sorted(paths)


def allowed_kinds(data: RunData) -> list[str]:
    """The run's ``select.allow_flags``: kinds that keep no candidate from being chosen or exported."""
    return list(data.config.select.allow_flags)


def blocking_kinds(data: RunData, rollout_id: str) -> list[str]:
    """The kinds flagged on a rollout (either role) that the run's ``select.allow_flags`` does not accept."""
    allowed = set(allowed_kinds(data))
    return [k for k in rollout_kinds(data, rollout_id) if k not in allowed]


def flag_section(data: RunData) -> Flags:
    """``summary.json``'s ``flags``: rollouts per kind, tasks per kind, task → kind → rollouts, flagged winners."""
    per_task: dict[str, dict[str, list[str]]] = {}
    for task_id in data.task_ids:
        rows: dict[str, list[str]] = {}
        for i in range(data.n):
            rid = f"{task_id}/{i}"
            for kind in rollout_kinds(data, rid) if rid in data.rollouts else []:
                rows.setdefault(kind, []).append(rid)
        if rows:
            per_task[task_id] = {k: rows[k] for k in _order(set(rows))}
    by_kind = {k: sum(len(t.get(k, [])) for t in per_task.values()) for k in KINDS}
    tasks_by_kind = {k: sum(1 for t in per_task.values() if k in t) for k in KINDS}
    winners: dict[str, dict[str, list[str]]] = {}
    for name in [*data.selectors, *data.oracles]:
        chosen = {
            s.task_id: kinds
            for s in data.selections.get(name, {}).values()
            if s.winner and (kinds := rollout_kinds(data, s.winner))
        }
        winners[name] = dict(sorted(chosen.items()))
    flagged = {rid for t in per_task.values() for rids in t.values() for rid in rids}
    return Flags(
        rollouts=len(flagged),
        by_kind={k: v for k, v in by_kind.items() if v},
        tasks_by_kind={k: v for k, v in tasks_by_kind.items() if v},
        per_task=per_task,
        winners=winners,
        allowed=allowed_kinds(data),
        fallback=data.config.select.flagged_fallback,
    )
