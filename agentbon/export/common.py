"""What every export needs: which selector's winners, each task's winning rollout, and what was flagged on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, cast

from agentbon.errors import ExportError
from agentbon.report.data import RunData
from agentbon.report.flags import blocking_kinds, rollout_flags, undone_paths
from agentbon.types import Flag, Rollout, Selection, Verdict

FlaggedPolicy = Literal["mark", "omit"]
"""``export.flagged``: ship flagged candidates marked, or leave out those with a flag the run does not accept."""


@dataclass(frozen=True)
class Winner:
    """One task's chosen candidate under a selector (rollout None when the selector chose nothing)."""

    task_id: str
    selection: Selection | None
    rollout: Rollout | None
    grade: Verdict | None
    flags: list[Flag] = field(default_factory=list)
    """What the evidence and grade verifications flagged on the winner (docs/security.md, Flags)."""
    undone: list[str] = field(default_factory=list)
    """Files whose changes grading undid before the tests ran: the patch ships them, the grade never saw them."""
    blocking: list[str] = field(default_factory=list)
    """Flag kinds outside the run's ``select.allow_flags`` (what ``export.flagged: omit`` leaves a winner out for)."""
    left_out: str = ""
    """Why the task has no winner to export yet: its latest selection failed on infrastructure (``RunData.left_out``;
    never exported as an empty patch, selected again on resume)."""

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
    """Every task of the run, in order, with ``selector``'s winner (``left_out`` set where its selection failed on
    infrastructure)."""
    chosen = data.selections.get(selector, {})
    left_out = data.left_out.get(selector, {})
    out = []
    for task_id in data.task_ids:
        if task_id in left_out:
            out.append(Winner(task_id, None, None, None, left_out=left_out[task_id]))
            continue
        selection = chosen.get(task_id)
        rollout = data.rollouts.get(selection.winner) if selection and selection.winner else None
        grade = data.grades.get(rollout.rollout_id) if rollout else None
        if rollout is None:
            out.append(Winner(task_id, selection, rollout, grade))
            continue
        rid = rollout.rollout_id
        out.append(
            Winner(task_id, selection, rollout, grade, rollout_flags(data, rid), undone_paths(data, rid),
                   blocking_kinds(data, rid))
        )  # fmt: skip
    return out


def flagged_policy(data: RunData, override: str | None = None) -> FlaggedPolicy:
    """``override`` (a command-line option) or the run's ``export.flagged`` (default ``mark``); a bad value is named."""
    value = override or data.config.export.flagged
    if value not in ("mark", "omit"):
        where = "--flagged" if override else "export.flagged in the run's config.yaml"
        raise ExportError(f"{where}: {value!r} is not one of mark, omit")
    return cast(FlaggedPolicy, value)


def flag_fields(flags: list[Flag], undone: list[str]) -> dict[str, list]:
    """``agentbon_flags`` (kind, detail, paths) and ``agentbon_undone`` for a JSON line; empty when nothing was flagged."""
    if not flags and not undone:
        return {}
    return {
        "agentbon_flags": [{"kind": f.kind, "detail": f.detail, "paths": list(f.paths)} for f in flags],
        "agentbon_undone": list(undone),
    }


def flag_note(flags: list[Flag], undone: list[str]) -> str:
    """Lines for a commit message or a patch header: each flag, and the files grading undid (empty when none)."""
    lines = [f"flag {f.kind}: {f.detail}" + (f" ({', '.join(f.paths[:10])})" if f.paths else "") for f in flags]
    if undone:
        lines.append(
            "grading undid this patch's changes to: " + ", ".join(undone) + " (restored before the tests ran: "
            "the grade never saw them; review or drop them before merging)"
        )
    return "\n".join(lines)


def as_patch_file(patch: str) -> str:
    """A patch as ``git apply`` wants it: ending in a newline (an empty patch stays empty)."""
    return patch if not patch or patch.endswith("\n") else patch + "\n"
