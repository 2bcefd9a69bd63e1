"""The selection stage: once a task has nothing open, every configured selector picks its winner.

Selectors run in the driver (they are cheap next to rollouts; a critic that is not loads once per run).
A selector that fails is recorded and skipped: one selector's failure never stops the batch. Its failure is
classified at the place ``select`` (orchestrate/faults.py): a critic's server down, timed out or misconfigured, or
anything else not the critic model's own answer, is infrastructure: the task is left out of that selector's figures,
the run exits 3, and a resume selects it again (docs/failure-taxonomy.md, "Selection").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentbon.config import RunConfig
from agentbon.errors import ConfigError
from agentbon.orchestrate.events import Recorder, Selected, SelectorError
from agentbon.orchestrate.faults import classify
from agentbon.protocols import Candidate, Selector
from agentbon.types import Role, Rollout, Selection, Task, Verdict

if TYPE_CHECKING:
    from agentbon.orchestrate.state import TaskBook
    from agentbon.store import RunStore

SelectorFactory = Callable[[str, RunConfig, "RunStore | None"], Selector]


class SelectionStage:
    """Builds each configured selector once and runs them all on a task's candidates."""

    def __init__(self, config: RunConfig, factory: SelectorFactory, store: RunStore | None = None):
        self.config, self.store = config, store
        self._factory = factory
        self._selectors: dict[str, Selector] = {}
        self.errors: list[SelectorError] = []

    def _selector(self, name: str) -> Selector:
        if name not in self._selectors:
            self._selectors[name] = self._factory(name, self.config, self.store)
        return self._selectors[name]

    def preflight(self) -> None:
        """Build every configured selector now, so a wrong name fails before any rollout runs."""
        for name in self.config.select.selectors:
            try:
                self._selector(name)
            except Exception as e:
                raise ConfigError(f"select.selectors: {name!r}: {type(e).__name__}: {e}") from e

    def run(
        self, task: Task, rollouts: list[Rollout], evidence: dict[str, Verdict], grade: dict[str, Verdict]
    ) -> list[Selection]:
        """Selections of every configured selector for one task (errors are collected in ``errors``)."""
        candidates = [
            Candidate(rollout=r, evidence=evidence.get(r.rollout_id), grade=grade.get(r.rollout_id))
            for r in sorted(rollouts, key=lambda r: r.index)
            if r.finished
        ]
        out: list[Selection] = []
        for name in self.config.select.selectors:
            try:
                selection = self._selector(name).select(task, candidates)
            except Exception as e:  # a failing selector (critic down, a bug) is recorded, the others still run
                failure = classify(e, place="select")
                error = f"{failure.kind}: {failure.message}"
                self.errors.append(SelectorError(
                    task_id=task.task_id, selector=name, error=error, error_kind=failure.kind, infra=failure.infra
                ))  # fmt: skip
                continue
            out.append(selection)
        return out

    def select_task(self, book: TaskBook, verdicts: dict[Role, dict[str, Verdict]], record: Recorder) -> None:
        """Select one task that has nothing open; record its selections and any selector errors."""
        task = book.task
        for selection in self.run(task, list(book.finished.values()), verdicts["evidence"], verdicts["grade"]):
            record.selection(selection)
        for error in self.errors:
            record(error)
        self.errors.clear()
        book.changed = False
        record(Selected(task_id=task.task_id))
