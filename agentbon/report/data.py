"""The run store as per-task arrays: what every metric and rendering reads (nothing is re-run).

Rules (design.md §4, §5): a rollout whose status is ``infra_error`` is not a valid sample (it is
left out of n and reported among the errors), nor is one ``cancelled`` by an early stop; a valid rollout without a grade verdict counts as
incorrect; a selector's scores come from its Selection's ``ranked`` list, a valid candidate missing
from that list ranks below every scored one, and a task the selector made no choice on counts as
unsolved for it. Oracle selections (``oracle=True``) are kept apart from the selectors.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from agentbon.store import RunStore
from agentbon.types import Rollout, Selection, Task, Verdict

# Cell codes of the task-by-rollout pass map.
MISSING, PASS, FAIL, UNGRADED, INFRA, CANCELLED = 0, 1, 2, 3, 4, 5
CELL_CODES = ".PFUIC"
"""One letter per cell code, as ``summary.json`` writes a task's row: ``PFFI`` = pass, fail, fail, infra error."""


def is_sample(rollout: Rollout) -> bool:
    """Whether a rollout counts as a sample: not an infra error, not cancelled by an early stop."""
    return rollout.status not in ("infra_error", "cancelled")


@dataclass
class RunData:
    """One run as arrays of shape ``(tasks, n)``, indexed by task row and rollout index."""

    run_id: str
    task_ids: list[str]
    n: int
    config: dict
    tasks: dict[str, Task]
    rollouts: dict[str, Rollout]
    grades: dict[str, Verdict]
    evidence: dict[str, Verdict]
    present: np.ndarray
    valid: np.ndarray
    correct: np.ndarray
    cells: np.ndarray
    """Pass-map code per cell: MISSING, PASS, FAIL, UNGRADED, INFRA, CANCELLED."""
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    """Per selector, scores with NaN where a cell is not a valid candidate (rows of unselected tasks all NaN)."""
    oracle_scores: dict[str, np.ndarray] = field(default_factory=dict)
    selections: dict[str, dict[str, Selection]] = field(default_factory=dict)
    """Selector name → task id → Selection (oracles included)."""
    oracles: list[str] = field(default_factory=list)
    selectors: list[str] = field(default_factory=list)
    """Non-oracle selectors, in the config's order, then by name."""

    @property
    def primary(self) -> str | None:
        """The selector whose winners are exported: the config's first that has selections."""
        return self.selectors[0] if self.selectors else None

    def is_valid(self, rollout: Rollout) -> bool:
        """Whether a rollout counts as a sample (not an infra error, not cancelled)."""
        return is_sample(rollout)


def _task_order(tasks: list[Task], rollouts: dict[str, Rollout], selections: list[Selection]) -> list[str]:
    order = [t.task_id for t in tasks]
    seen = set(order)
    extra = {r.task_id for r in rollouts.values()} | {s.task_id for s in selections}
    return order + sorted(extra - seen)


def _selector_order(config: dict, names: set[str]) -> list[str]:
    configured = list((config.get("select") or {}).get("selectors") or [])
    return [s for s in configured if s in names] + sorted(names - set(configured))


def load_run(store: RunStore) -> RunData:
    """Read tasks, rollouts, verdicts and selections from ``store`` into arrays."""
    config = store.config()
    tasks = store.tasks()
    rollouts = store.rollouts()
    grades, evidence = store.verdicts("grade"), store.verdicts("evidence")
    selections = store.selections()
    task_ids = _task_order(tasks, rollouts, selections)
    row = {t: i for i, t in enumerate(task_ids)}
    n = max([int(config.get("n") or 0), *(r.index + 1 for r in rollouts.values())] or [0])
    shape = (len(task_ids), n)
    present, valid = np.zeros(shape, bool), np.zeros(shape, bool)
    correct, cells = np.zeros(shape), np.full(shape, MISSING, dtype=np.int8)
    for rid, r in rollouts.items():
        i, j = row[r.task_id], r.index
        present[i, j] = True
        if not is_sample(r):  # not a sample: its outcome is unknown
            cells[i, j] = INFRA if r.status == "infra_error" else CANCELLED
            continue
        valid[i, j] = True
        verdict = grades.get(rid)
        status = verdict.status if verdict else None
        correct[i, j] = 1.0 if status == "pass" else 0.0
        cells[i, j] = {"pass": PASS, "fail": FAIL, "infra_error": INFRA}.get(status or "", UNGRADED)
    data = RunData(
        run_id=store.run_id,
        task_ids=task_ids,
        n=n,
        config=config,
        tasks={t.task_id: t for t in tasks},
        rollouts=rollouts,
        grades=grades,
        evidence=evidence,
        present=present,
        valid=valid,
        correct=correct,
        cells=cells,
    )
    by_selector: dict[str, dict[str, Selection]] = {}
    for s in selections:
        by_selector.setdefault(s.selector, {})[s.task_id] = s
    data.selections = by_selector
    oracle_names = {name for name, sel in by_selector.items() if any(s.oracle for s in sel.values())}
    data.oracles = sorted(oracle_names)
    data.selectors = _selector_order(config, set(by_selector) - oracle_names)
    for name, per_task in by_selector.items():
        target = data.oracle_scores if name in oracle_names else data.scores
        target[name] = _scores(data, per_task, row)
    return data


def _scores(data: RunData, per_task: dict[str, Selection], row: dict[str, int]) -> np.ndarray:
    scores = np.full(data.valid.shape, np.nan)
    for task_id, selection in per_task.items():
        i = row[task_id]
        scores[i] = np.where(data.valid[i], -np.inf, np.nan)  # valid but unranked: below every scored one
        for ranked in selection.ranked:
            task, _, index = ranked.rollout_id.rpartition("/")
            if task == task_id and index.isdigit() and int(index) < data.n and data.valid[i, int(index)]:
                scores[i, int(index)] = -np.inf if np.isnan(ranked.score) else ranked.score
    return scores
