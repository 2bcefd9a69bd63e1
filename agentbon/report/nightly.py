"""What changed from one run to the next, per task and repository (``agentbon report --compare A B``).

For a nightly batch the headline figures are not the question; the morning's question is which repositories
got solved tonight that were not last night, which stopped being solved, and which results cannot be trusted.
Per task of either run:

- **state** in each run: ``solved`` (the primary selector's winner passes its grade), ``covered`` (some candidate
  passes but the winner does not), ``unsolved``, and two without a result: ``infra`` (no candidate got a grade:
  every one ended in an infrastructure error) and ``not run`` (the night ended before the task's rollouts were
  graded or before its selection: interrupted, or its selector failed); or absent;
- **change**: ``newly solved``, ``newly failing``, ``infra`` and ``not run`` (either night has no result for the
  task, tonight's state first: nothing is read from it), ``new task``, ``dropped``, ``still unsolved``, ``still
  solved``;
- **flaky**: identical patches (after normalising whitespace at line ends) that were graded ``pass`` once and
  ``fail`` another time, within a night or across the two. The grade's tests, not the candidate, decided
  differently: such a task's change says so, and it should not be read as the model's doing.

Reads the two run stores only (nothing is re-run).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agentbon.report.tables import Table
from agentbon.store import RunStore
from agentbon.types import Task, is_git_url

ORDER = ("newly failing", "newly solved", "infra", "not run", "new task", "dropped", "still unsolved", "still solved")
NO_RESULT = ("infra", "not run")
"""States of a task a night has no result for: a change is never read from them."""


@dataclass(frozen=True)
class TaskState:
    task_id: str
    repository: str
    state: str
    """``solved``, ``covered``, ``unsolved``, ``infra`` or ``not run``."""
    graded: int
    passed: int


def repository(task: Task) -> str:
    """The repository a task belongs to, as a reader names it: the dataset's ``owner/name``, a URL's last two
    parts, a local clone's folder, or the task folder of a ``repo.bundle``."""
    if task.metadata.get("repo"):
        return task.metadata["repo"]
    url = task.repo.url.rstrip("/")
    if is_git_url(url):
        return "/".join(url.removesuffix(".git").replace(":", "/").split("/")[-2:])
    path = Path(url)
    return path.parent.name if path.suffix == ".bundle" else path.name


def _normalised(patch: str) -> str:
    return "\n".join(line.rstrip() for line in patch.strip().splitlines())


def states(store: RunStore, primary: str | None) -> dict[str, TaskState]:
    """Each task's state in one run; ``primary`` None (no selection made yet) reads the run's configured first."""
    rollouts, grades = store.rollouts(), store.verdicts("grade")
    recorded = store.config()
    primary = primary or next(iter(recorded.select.selectors if recorded else []), None)
    # A selection a later infrastructure failure replaced no longer stands: the task has no result (not run).
    winners = {s.task_id: s.winner for s in store.standing_selections() if s.selector == primary}
    out = {}
    for task in store.tasks():
        mine = [ro for ro in rollouts.values() if ro.task_id == task.task_id]
        graded = [grades[ro.rollout_id] for ro in mine if ro.rollout_id in grades]
        decided = [v for v in graded if v.decided]
        infra = any(ro.status == "infra_error" for ro in mine) or any(v.status == "infra_error" for v in graded)
        passed = sum(v.status == "pass" for v in decided)
        winner = winners.get(task.task_id)
        if winner and (v := grades.get(winner)) is not None and v.status == "pass":
            state = "solved"
        elif not decided:
            state = "infra" if infra else "not run"
        elif primary is not None and task.task_id not in winners:
            state = "not run"  # graded, but the night ended before the task's selection
        else:
            state = "covered" if passed else "unsolved"
        out[task.task_id] = TaskState(task.task_id, repository(task), state, len(decided), passed)
    return out


def flaky(*stores: RunStore) -> dict[str, int]:
    """Per task, the distinct patches graded both ``pass`` and ``fail`` across the given runs."""
    seen: dict[tuple[str, str], set[str]] = {}
    for store in stores:
        rollouts = store.rollouts()
        for rid, verdict in store.verdicts("grade").items():
            rollout = rollouts.get(rid)
            if rollout is None or not verdict.decided or not rollout.patch.strip():
                continue
            seen.setdefault((rollout.task_id, _normalised(rollout.patch)), set()).add(verdict.status)
    counts: dict[str, int] = {}
    for (task_id, _), outcomes in seen.items():
        if outcomes == {"pass", "fail"}:
            counts[task_id] = counts.get(task_id, 0) + 1
    return counts


def change(a: TaskState | None, b: TaskState | None) -> str:
    """What happened to a task from night A to night B (``ORDER``)."""
    if b is None:
        return "dropped"
    missing = [s.state for s in (b, a) if s is not None and s.state in NO_RESULT]
    if missing:
        return missing[0]
    if a is None:
        return "new task"
    was, now = a.state == "solved", b.state == "solved"
    return {(False, True): "newly solved", (True, False): "newly failing", (True, True): "still solved"}.get(
        (was, now), "still unsolved"
    )


def changes_table(store_a: RunStore, store_b: RunStore, primary_a: str | None, primary_b: str | None) -> Table:
    """One row per task of either run: repository, state in A and B, the change, flaky patches; most urgent first."""
    a, b = states(store_a, primary_a), states(store_b, primary_b)
    unstable = flaky(store_a, store_b)
    ids = sorted(set(a) | set(b), key=lambda t: (ORDER.index(change(a.get(t), b.get(t))), t))
    rows, counts = [], dict.fromkeys(ORDER, 0)
    for task_id in ids:
        before, after = a.get(task_id), b.get(task_id)
        what = change(before, after)
        counts[what] += 1
        shaky = unstable.get(task_id, 0)
        if shaky and what in ("newly solved", "newly failing"):
            what += " (flaky tests)"
        known = after or before
        repo = known.repository if known is not None else ""
        rows.append([
            task_id, repo, _cell(before), _cell(after), what,
            f"{shaky} patch(es) graded both ways" if shaky else "",
        ])  # fmt: skip
    notes = [", ".join(f"{n} {name}" for name, n in counts.items() if n) or "no tasks"]
    notes.append(
        f"Solved: the primary selector's winner passes its grade (A: {primary_a or '—'}, B: {primary_b or '—'}); "
        "covered: some candidate passes, the winner does not. Without a result, listed apart and never read as a "
        "change: infra, no candidate was graded (every rollout or verification an infrastructure error; the run "
        "exits 3 and resumes with the same command); not run, the night ended before the task was graded or selected."
    )
    if unstable:
        notes.append(
            f"⚠ {len(unstable)} task(s) have identical patches graded pass once and fail another time: their tests are "
            "flaky, so their change is not the model's doing."
        )
    title = f"Per task: {store_a.run_id} → {store_b.run_id}"
    return Table("changes", title, ["task", "repository", "A", "B", "change", "flaky"], rows, notes)


def _cell(state: TaskState | None) -> str:
    if state is None:
        return "—"
    return f"{state.state} ({state.passed}/{state.graded} pass)"
