"""The batch budget in the report: what the allocator spent, what it solved, and a uniform split of the same budget
replayed from the run's own rollouts (no extra compute).

"Solved" here is coverage: a rollout of the task passed the grade (docs/estimators.md, "A batch budget"). The
uniform split gives every task ``budget // tasks`` rollouts, at most N (a budget above N x tasks leaves the rest
unspent), and its solved tasks per 100 rollouts are over the rollouts it spends; the replay takes each task's
rollouts of the lowest indices, which is what a uniform run with the same seeds would have drawn. A task the budget gave fewer rollouts
than that share, none of which passed, cannot be replayed: the replay gives the count without them and with them
(an upper bound).
"""

from __future__ import annotations

from collections import Counter

from agentbon.orchestrate.events import Allocated
from agentbon.report.data import CANCELLED, MISSING, RunData
from agentbon.report.schema import BudgetPart, MostGiven


def budget_section(data: RunData, allocated: list[Allocated]) -> BudgetPart | None:
    """The ``budget`` part of ``summary.json``; None for a run without a budget."""
    first = data.budget_first
    if first is None or not data.task_ids:
        return None
    total, tasks = int(data.config.budget or 0), len(data.task_ids)
    ran = (data.cells != MISSING) & (data.cells != CANCELLED)
    passed = (data.correct * data.valid) > 0
    solved = passed.any(axis=1)
    share = min(total // tasks, data.n)  # a uniform split cannot give a task more than N
    used = share * tasks  # what the uniform split spends, whatever the outcomes
    within = passed[:, :share].any(axis=1)
    uniform_solved = int(within.sum())
    unknown = int((~within & (ran[:, :share].sum(axis=1) < share)).sum())  # fewer ran, none passed
    spent = int(ran.sum())
    per_task = Counter(e.task_id for e in allocated)
    return BudgetPart(
        rollouts=total,
        tokens=data.config.budget_tokens,
        first=first,
        n=data.n,
        spent=spent,
        decisions=len(allocated),
        tasks_given_more=len(per_task),
        most_given=[MostGiven(task_id=t, rollouts=c) for t, c in per_task.most_common(5)],
        solved=int(solved.sum()),
        solved_first=int(passed[:, :first].any(axis=1).sum()),
        uniform_share=share,
        uniform_rollouts=used,
        uniform_solved=uniform_solved,
        uniform_unreplayable=unknown,
        uniform_n_rollouts=tasks * data.n,
        saved_vs_uniform_n=tasks * data.n - spent,
        solved_per_100=round(100 * float(solved.sum()) / spent, 3) if spent else None,
        uniform_solved_per_100=round(100 * uniform_solved / used, 3) if used else None,
    )


def budget_rows(b: BudgetPart) -> list[list[str]]:
    """The report table's rows for a ``budget`` part."""
    spread = ", ".join(f"{m.task_id} +{m.rollouts}" for m in b.most_given) or "—"
    upper = f" (up to {b.uniform_solved + b.uniform_unreplayable} with {b.uniform_unreplayable} task(s) " \
            "the budget gave fewer rollouts, none passing)" if b.uniform_unreplayable else ""  # fmt: skip
    tokens = f", {b.tokens:,} tokens" if b.tokens else ""
    used = b.uniform_rollouts
    capped = "" if used is None else f" ({used} rollouts{', capped at N' if b.uniform_share == b.n else ''})"
    return [
        ["budget", f"{b.rollouts} rollouts{tokens}; {b.spent} spent, first {b.first} per task (the curves' sample)"],
        ["allocation decisions", f"{b.decisions} rollouts to {b.tasks_given_more} task(s): {spread}"],
        ["tasks solved (a rollout passed the grade)", f"{b.solved}; by the first allotments alone {b.solved_first}"],
        ["a uniform split of the budget, replayed",
         f"{b.uniform_share} per task{capped}: {b.uniform_solved} solved{upper}"],
        ["solved per 100 rollouts", f"{_num(b.solved_per_100)} (uniform split {_num(b.uniform_solved_per_100)})"],
        ["against N for every task", f"{b.uniform_n_rollouts} rollouts; {b.saved_vs_uniform_n} not run"],
    ]  # fmt: skip


def _num(x: float | None) -> str:
    return "—" if x is None else f"{x:.1f}"


