"""What every export needs: which selector's winners, and each task's winning rollout."""

from __future__ import annotations

from dataclasses import dataclass

from agentbon.errors import ExportError
from agentbon.report.data import RunData
from agentbon.types import Rollout, Selection, Verdict


@dataclass(frozen=True)
class Winner:
    """One task's chosen candidate under a selector (rollout None when the selector chose nothing)."""

    task_id: str
    selection: Selection | None
    rollout: Rollout | None
    grade: Verdict | None

    @property
    def patch(self) -> str:
        return self.rollout.patch if self.rollout else ""


def pick_selector(data: RunData, name: str | None) -> str:
    """``name`` if the run has selections under it, else the run's primary selector; a clear error otherwise."""
    known = [*data.selectors, *data.oracles]
    if name is None:
        if data.primary is None:
            raise ExportError(f"{data.run_id}: the run has no selections yet (known selectors: none)")
        return data.primary
    if name not in data.selections:
        raise ExportError(
            f"--selector {name}: no selections under that name in {data.run_id} (have: {', '.join(known) or 'none'})"
        )
    return name


def winners(data: RunData, selector: str) -> list[Winner]:
    """Every task of the run, in order, with ``selector``'s winner."""
    chosen = data.selections.get(selector, {})
    out = []
    for task_id in data.task_ids:
        selection = chosen.get(task_id)
        rollout = data.rollouts.get(selection.winner) if selection and selection.winner else None
        grade = data.grades.get(rollout.rollout_id) if rollout else None
        out.append(Winner(task_id, selection, rollout, grade))
    return out


def as_patch_file(patch: str) -> str:
    """A patch as ``git apply`` wants it: ending in a newline (an empty patch stays empty)."""
    return patch if not patch or patch.endswith("\n") else patch + "\n"
