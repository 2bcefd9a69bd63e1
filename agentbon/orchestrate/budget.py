"""A batch budget: a fixed number of rollouts (and tokens) for the whole batch, spent where it buys the most.

Every task first gets ``first`` rollouts (``run.budget_first``, the part of its sample fixed in advance: the
curves are computed from it alone, docs/estimators.md). What is left goes out one rollout at a time, as sandbox
slots free up, to the task whose next rollout is expected to buy the most:

- only tasks whose first allotment is finished and verified (the estimate rests on outcomes, not guesses) and
  that are below ``n`` rollouts;
- first the tasks with no verified pass yet (an evidence pass). A task whose evidence is its grade stops on a
  verified pass (it is solved; early stop also ends it). A task whose evidence is not its grade (SWE-bench: the
  hidden tests decide) is not solved by a pass of its evidence, which the demo's runs show failing the grade often
  enough to matter: it goes to the back of the queue instead, and gets more rollouts only when every task without
  a pass is at ``n`` (not merely waiting for its verdicts), fewest evidence passes first (each further candidate
  is one more the selector can choose);
- the estimate is the posterior mean of the task's pass rate under a Beta prior fitted to the batch (its pooled
  rate of evidence passes so far, worth ``PRIOR_WEIGHT`` samples), discounted by the rollouts it already has in
  flight (each must fail for the next one to be its first pass); ties go to the task whose candidates came closest
  (the largest share of evidence tests passed), then to the one with fewer rollouts;
- with a token budget, nothing more is given out once the tokens spent, plus the mean per rollout for each one in
  flight, would pass it.

Each decision is recorded (``allocated`` events) with its estimate and why. The pure core is here; the driver
calls ``Allocator.next`` whenever a slot is free (orchestrate/driver.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agentbon.config import RunConfig

PRIOR_WEIGHT = 2.0
"""How many samples the batch-wide prior counts for in each task's estimate."""


@dataclass
class TaskState:
    """What the allocator knows of one task."""

    task_id: str
    allotted: int = 0
    """Rollout indices given out so far (finished, in flight or queued)."""
    verified: int = 0
    """Finished rollouts whose evidence verdict is decided."""
    passes: int = 0
    """Of those, evidence passes (a verified pass)."""
    progress: float = 0.0
    """The largest share of evidence tests any of its candidates passed."""
    tokens: int = 0
    """Tokens its finished rollouts used."""
    finished: int = 0
    """Finished rollouts (verified or not)."""
    limit: int | None = None
    """The most rollouts this task can get besides ``n`` (a replay: what was recorded)."""
    evidence_is_grade: bool = True
    """Whether a verified pass solves the task (and so ends its allotment); where it does not, a task with a pass
    is given more only after every task without one."""


@dataclass(frozen=True)
class Decision:
    task_id: str
    index: int
    estimate: float
    reason: str
    left: int
    """Rollouts of the budget left after this one."""


@dataclass(frozen=True)
class Allocator:
    """``total`` rollouts for the batch (and ``tokens`` where set), ``first`` per task up front, ``n`` at most."""

    total: int
    n: int
    first: int
    tokens: int | None = None

    def problem(self, tasks: int) -> str | None:
        """Why this budget cannot run on ``tasks`` tasks (None when it can)."""
        if self.first > self.n:
            return f"run.budget_first ({self.first}) is more than n ({self.n})"
        if self.total < tasks * self.first:
            return (
                f"run.budget ({self.total} rollouts) is less than the first allotment: {tasks} tasks x "
                f"{self.first} (run.budget_first) = {tasks * self.first}"
            )
        return None

    @classmethod
    def of(cls, config: RunConfig) -> Allocator | None:
        """The batch budget's allocator for ``config``, or None without ``run.budget``."""
        if config.budget is None:
            return None
        return cls(total=config.budget, n=config.n, first=config.fixed_part(), tokens=config.budget_tokens)

    def prior(self, states: Iterable[TaskState]) -> tuple[float, float]:
        """Beta(a, b) worth ``PRIOR_WEIGHT`` samples around the batch's pooled rate of verified passes."""
        seen = [s for s in states if s.verified]
        verified = sum(s.verified for s in seen)
        rate = (sum(s.passes for s in seen) + 0.5) / (verified + 1.0)  # never 0 or 1
        return rate * PRIOR_WEIGHT, (1.0 - rate) * PRIOR_WEIGHT

    @staticmethod
    def estimate(state: TaskState, prior: tuple[float, float]) -> float:
        """The chance that the task's next rollout is a verified pass and the first one since those in flight (for a
        task without a pass: its first)."""
        a, b = prior
        rate = (state.passes + a) / (state.verified + a + b)
        in_flight = max(state.allotted - state.finished, 0)
        return rate * (1.0 - rate) ** in_flight

    def next(self, states: dict[str, TaskState], free: int) -> list[Decision]:
        """Up to ``free`` rollouts to give out now (fewer when the budget or the eligible tasks run out)."""
        out: list[Decision] = []
        spent = sum(s.allotted for s in states.values())
        prior = self.prior(states.values())
        for _ in range(free):
            left = self.total - spent
            if left <= 0 or self._tokens_spent(states):
                break
            eligible = [s for s in states.values() if self._eligible(s)]
            if any(s.passes == 0 and s.allotted < self._cap(s) for s in states.values()):
                eligible = [s for s in eligible if s.passes == 0]  # the back of the queue waits for them
            if not eligible:
                break
            best = max(eligible, key=lambda s: self._rank(s, prior))
            estimate = self.estimate(best, prior)
            reason = (
                f"estimate {estimate:.3f} (pass rate prior {prior[0] / PRIOR_WEIGHT:.3f}, "
                f"{best.allotted - best.finished} in flight, best evidence share {best.progress:.2f})"
            )
            if best.passes:
                reason = (
                    f"{best.passes} verified pass(es) in {best.verified}, but its evidence is not its grade and every "
                    f"task without a pass is at n; {reason}"
                )
            else:
                reason = f"no verified pass in {best.verified} verified rollout(s); {reason}"
            out.append(Decision(best.task_id, best.allotted, round(estimate, 6), reason, left - 1))
            best.allotted += 1
            spent += 1
        return out

    def _rank(self, s: TaskState, prior: tuple[float, float]) -> tuple:
        """The larger the sooner: the fewest verified passes (none first), then the estimate, the closest
        candidates, the fewest rollouts."""
        return (-s.passes, self.estimate(s, prior), s.progress, -s.allotted, s.task_id)

    def _cap(self, s: TaskState) -> int:
        return self.n if s.limit is None else min(self.n, s.limit)

    def _eligible(self, s: TaskState) -> bool:
        cap = self._cap(s)
        open_ = s.passes == 0 or not s.evidence_is_grade
        return open_ and s.allotted < cap and s.verified >= min(self.first, cap)

    def _tokens_spent(self, states: dict[str, TaskState]) -> bool:
        if self.tokens is None:
            return False
        finished = sum(s.finished for s in states.values())
        used = sum(s.tokens for s in states.values())
        in_flight = sum(max(s.allotted - s.finished, 0) for s in states.values())
        per_rollout = used / finished if finished else 0.0
        return used + per_rollout * in_flight >= self.tokens


def replay(
    outcomes: dict[str, list[bool]],
    verified: dict[str, list[bool]],
    allocator: Allocator,
    evidence_is_grade: dict[str, bool] | None = None,
) -> tuple[dict[str, int], list[Decision]]:
    """What the allocator would have given each task, replaying recorded outcomes in index order (one rollout at a
    time, each finished and verified before the next decision): ``outcomes[t][i]`` is whether rollout ``i`` of task
    ``t`` was a verified pass; ``verified[t][i]`` whether it was verified at all. Rollouts past what was recorded
    are not given; ``evidence_is_grade[t]`` (default: every task) whether a verified pass ends the task. Returns
    rollouts per task and the decisions (benchmarks/budget_bench.py)."""
    final = evidence_is_grade or {}
    states = {t: TaskState(t, limit=len(outcomes[t]), evidence_is_grade=final.get(t, True)) for t in outcomes}
    for t, s in states.items():
        take = min(allocator.first, len(outcomes[t]))
        s.allotted = take
        _observe(s, outcomes[t][:take], verified[t][:take])
    decisions: list[Decision] = []
    while picked := allocator.next(states, 1):
        d = picked[0]  # next() gave the rollout out; the replay finishes it at once
        decisions.append(d)
        _observe(states[d.task_id], outcomes[d.task_id][d.index : d.index + 1], verified[d.task_id][d.index : d.index + 1])
    return {t: s.allotted for t, s in states.items()}, decisions


def _observe(state: TaskState, passes: list[bool], verified: list[bool]) -> None:
    state.finished += len(passes)
    state.verified += sum(verified)
    state.passes += sum(p and v for p, v in zip(passes, verified, strict=True))
