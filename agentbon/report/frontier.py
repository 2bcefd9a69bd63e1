"""Staged verification, replayed from the run: selected accuracy against what verification cost, per policy.

A run verifies every candidate with the evidence tests and then selects. A staged policy spends less: the
critic ranks a task's candidates (cheap: no container), and only its top ``m`` go through the evidence tests; the
winner is the best of those by evidence, then critic. The cheap filters come first in every policy, and cost no
test run: a candidate whose patch is empty or does not apply, or that a blocking flag marks, is not a candidate
(``RunData.candidate``; under ``select.flagged_fallback: flagged`` a task without another one chooses among its
flagged ones, metrics/fallback.py). The policies replayed, each over the run's own records (no extra compute):

- ``tests on all, then critic`` (the run's ``tests-then-critic``): every candidate tested;
- ``critic, tests on top m`` for m = 1, 2, 4, ... below the task's candidates;
- ``critic alone``: no test run at all;
- each of the run's selectors that never reads a test (``majority``, ``soft-bon``, ``random``) alone, among all the
  candidates: no test run, and the exact expectation of its choice where it draws (as its selected@k reads it);
- where the run's verdicts recorded the parse stage (``Verdict.parses``), each of these again after it: a task's
  candidates whose Python files do not all compile are dropped before the critic ranks (where that would drop
  them all, none is). The check shares the apply's engine call, so it is counted as free;
- where the evidence has FAIL_TO_PASS and PASS_TO_PASS tests and the runner reported each test's time
  (``Verdict.test_s``), each of these again after a subset stage: the FAIL_TO_PASS tests run first on every
  candidate (its cost: the verification's fixed part, its seconds less its tests' own, plus those tests' own), the
  candidates that fail one are dropped, and a candidate tested further pays the rest of its seconds. Without a
  critic in between, this stage loses nothing: an evidence pass needs every FAIL_TO_PASS test to pass. The times
  come from the sandbox that ran the candidate, so a candidate can misstate them; they move this estimate only.

Selected accuracy is the share of the run's tasks whose chosen candidate passed the grade (no candidate: not
solved); a task where the critic's or a replayed selector's selection failed on infrastructure is left out of every
policy (``RunData.left_out_rows``), never scored 0. Verification cost is the evidence tests' container-seconds as recorded (a candidate whose verdict was
shared with an identical patch's cost nothing; where only the copy falls in the top m, that undercounts) and, for
a critic that calls a model (the judge), the tokens it spent on the candidates it ranked (``Ranked.tokens`` of the
run's ``critic`` selector; unknown for runs before they were recorded). "Throughput" is the
all-tests cost over the policy's cost: how many more candidates the same verification budget would check.
"""

from __future__ import annotations

import numpy as np

from agentbon.metrics.fallback import among_whole
from agentbon.metrics.sampling import flat_index, gather_rows
from agentbon.report.data import RunData
from agentbon.report.schema import Anchor, Frontier, FrontierPolicy
from agentbon.select import SELECTORS

ANCHOR = Anchor(
    throughput=11.6,
    accuracy_drop_pct=8.3,
    what="staged verification with outcome reward models against full test-suite verification, as reported on "
    "Python code benchmarks",
)
"""The figure issue readers compare with: 11.6x the throughput for 8.3 % less accuracy."""


def frontier_section(data: RunData) -> Frontier | None:
    """The ``frontier`` part of ``summary.json``; None without recorded critic scores or graded candidates."""
    critic = data.scores.get("critic")
    # A task whose critic (or a selector replayed here) failed on infrastructure is out of every policy, never
    # scored 0: the policies are compared on the same tasks.
    out_rows = data.left_out_rows("critic", *UNTESTED, *TOURNAMENTS)
    cells = among_whole(data.candidate, data.fallback, data.valid) & ~out_rows[:, None]
    if critic is None or not cells.any():
        return None
    # Each task's candidates in the critic's order (ties by index; non-candidates last), sorted once: a stage that
    # narrows the candidates keeps the order of those left, so every family of policies reads this one order.
    order = np.argsort(-np.where(cells & np.isfinite(critic), critic, -np.inf), axis=1, kind="stable")
    replay = _Replay(data, order, tasks=int((~out_rows).sum()))
    out = replay.policies(cells, "")
    unparsed = cells & data.unparsed if data.parse_checked else np.zeros_like(cells)
    if data.parse_checked:  # the parse stage first: the candidates whose Python files all compile
        out += replay.policies(_narrowed(cells, cells & ~unparsed), "parses, then ")
    subset = cells & data.subset_known if data.subset_checked else np.zeros_like(cells)
    if data.subset_checked:  # the evidence's FAIL_TO_PASS tests first, on every candidate; the rest on survivors
        kept = _narrowed(cells, cells & ~(subset & data.subset_fail))
        subset_cost = float(np.where(subset, data.subset_s, 0.0).sum())
        rest = np.where(subset, data.evidence_s - data.subset_s, data.evidence_s)
        out += replay.policies(kept, "FAIL_TO_PASS first, then ", cost=rest, paid=subset_cost)
    out += _untested(data, cells, replay.tasks)
    out += _tournaments(data, cells, replay.tasks, ~out_rows)
    full_cost, base = out[0].throughput or 0.0, out[0].accuracy
    for p in out:  # ``throughput`` held each policy's cost until here
        cost = p.throughput or 0.0
        p.throughput = round(full_cost / cost, 3) if cost > 0 else None
        p.accuracy_drop_points = round(100 * (base - p.accuracy), 3)
    from agentbon.report.calibration import run_critic

    critic_name = run_critic(data)[0]
    return Frontier(
        policies=out,
        critic=critic_name,
        critic_tokens=(
            int(data.critic_tokens[cells].sum()) if data.critic_tokens is not None
            else "unknown" if critic_name in ("llm-judge", "scale-judge") else 0
        ),
        anchor=ANCHOR,
        parse_stage=data.parse_checked,
        unparsed=int(unparsed.sum()),
        subset_stage=data.subset_checked,
        subset_costed=int(subset.sum()),
        subset_dropped=int((subset & data.subset_fail).sum()),
        subset_live=int((subset & data.subset_live).sum()) if data.subset_checked else 0,
        candidates=int(cells.sum()),
        tasks=replay.tasks,
        tasks_left_out=[t for t, out in zip(data.task_ids, out_rows, strict=True) if out],
    )  # fmt: skip


UNTESTED = tuple(
    name for name, cls in SELECTORS.items() if not cls.reads_tests and not cls.oracle and cls.estimator != "tournament"
)
"""The selectors that never read a test (``reads_tests``): each is a point of the frontier with no verification
cost (the tournaments apart, below)."""
TOURNAMENTS = tuple(name for name, cls in SELECTORS.items() if cls.estimator == "tournament")
"""The selectors that compare pairs (``tournament``, ``tests-then-tournament``): a point each, charged the tokens of
the comparisons they recorded, and the evidence tests on every candidate where they read them."""


def _tournaments(data: RunData, cells: np.ndarray, tasks: int, rows: np.ndarray) -> list[FrontierPolicy]:
    """Each tournament selector of the run choosing among all of a task's candidates (``cells``): the exact
    expectation of its choice from its recorded comparisons (its selected@k at k = n), the evidence tests' seconds on
    every candidate where it reads them, and the tokens its comparisons spent on the ``rows`` counted (None where none
    were recorded)."""
    from agentbon.metrics.tournament import tournament_selected_at_k
    from agentbon.report.compute import as_estimator_scores

    out = []
    for name in TOURNAMENTS:
        scores = data.scores.get(name)
        if scores is None or not tasks:
            continue
        s = np.where(data.valid, as_estimator_scores(scores, "tournament", cells), np.nan)
        whole = tournament_selected_at_k(s, data.correct * cells, data.comparisons.get(name, {}), max(data.n, 1))
        values = whole.values if not isinstance(whole, np.ndarray) else whole
        accuracy = float(np.asarray(values)[:, 0].sum()) / tasks
        tested = SELECTORS[name].reads_tests
        spend = float(np.where(cells, data.evidence_s, 0.0).sum()) if tested else 0.0
        spent = data.comparison_tokens.get(name)
        tokens = None if spent is None else int(spent[rows].sum())
        policy = f"{name}: tests on all, then pairwise" if tested else f"{name} alone (no tests)"
        out.append(FrontierPolicy(policy=policy, tested=int(cells.sum()) if tested else 0, container_s=round(spend, 3),
                                  accuracy=round(accuracy, 6), throughput=spend, accuracy_drop_points=0.0,
                                  tokens=tokens))  # fmt: skip
    return out


def _untested(data: RunData, cells: np.ndarray, tasks: int) -> list[FrontierPolicy]:
    """The run's selectors that read no test, each choosing among all of a task's candidates (``cells``, over
    ``tasks`` tasks): selected accuracy as the exact expectation of its choice (ties and draws included, as the
    curves compute selected@k at k = n)."""
    from agentbon.report.compute import as_estimator_scores

    right = data.correct * cells
    out = []
    for name in UNTESTED:
        scores = data.scores.get(name)
        if scores is None or not tasks:
            continue
        est = SELECTORS[name].estimator
        logits = as_estimator_scores(scores, est, cells)
        # A choice among all of them: the exact expectation has a closed form (no sum over subsets, no sort).
        whole = softmax_whole if est == "softmax" else top_group_mean
        accuracy = float(whole(logits, right, data.valid).sum()) / tasks if tasks else 0.0
        # soft-bon draws by the critic's scores: what a critic that calls a model spent is its cost too.
        tokens = None if name != "soft-bon" or data.critic_tokens is None else int(data.critic_tokens[cells].sum())
        out.append(FrontierPolicy(policy=f"{name} alone (no tests)", tested=0, container_s=0.0,
                                  accuracy=round(accuracy, 6), throughput=0.0, accuracy_drop_points=0.0, tokens=tokens))
    return out


def softmax_whole(logits: np.ndarray, correct: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Per row, the expected correctness of a softmax draw among all its valid samples: ``Σ y w / Σ w`` with
    ``w = exp(logit)`` (a logit of ``-inf`` is weight 0, and wins only where all are, then uniformly), which is
    ``softmax_selected_at_k`` at k = n without its sum over subsets."""
    ok = valid & ~np.isnan(logits)
    finite = ok & np.isfinite(logits)
    top = np.max(np.where(finite, logits, -np.inf), axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        w = np.where(finite, np.exp(np.where(finite, logits - np.where(np.isfinite(top), top, 0.0), 0.0)), 0.0)
    total = w.sum(axis=1)
    y = np.where(ok, correct, 0.0)
    uniform = y.sum(axis=1) / np.maximum(ok.sum(axis=1), 1)
    return np.where(total > 0, (w * y).sum(axis=1) / np.where(total > 0, total, 1.0), uniform)


def top_group_mean(scores: np.ndarray, correct: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Per row, the expected correctness of the top-scored of all its valid samples, ties uniform: the mean over
    the samples whose score is the row's highest (``selected_at_k`` at k = n; a uniform choice is the case where
    all candidates score alike). A row with no valid sample scores 0."""
    ok = valid & ~np.isnan(scores)
    top = np.max(np.where(ok, scores, -np.inf), axis=1, keepdims=True)
    best = ok & (scores == top)
    return np.where(best, correct, 0.0).sum(axis=1) / np.maximum(best.sum(axis=1), 1)


def _narrowed(cells: np.ndarray, kept: np.ndarray) -> np.ndarray:
    """A filter narrows a task's candidates, never empties them: where it would drop them all, all go on."""
    kept = kept.copy()
    emptied = ~kept.any(axis=1)
    kept[emptied] = cells[emptied]
    return kept


class _Replay:
    """The policies over one critic order (``order``: each row's cells, the critic's best first)."""

    def __init__(self, data: RunData, order: np.ndarray, tasks: int):
        self.data, self.order = data, order
        self.tasks = tasks  # what accuracy is a share of: the run's tasks less those left out
        self.flat = flat_index(order, order.shape[1])
        self.right = gather_rows(data.correct > 0, order, self.flat)
        self.passing = gather_rows(data.evidence_pass, order, self.flat)
        self.tokens = data.critic_tokens

    def policies(
        self, cells: np.ndarray, prefix: str, cost: np.ndarray | None = None, paid: float = 0.0
    ) -> list[FrontierPolicy]:
        """Every policy over the candidates in ``cells``: all tested, the critic's top m tested, the critic alone
        (``throughput`` holds the cost until the caller turns it into a ratio). A tested candidate costs ``cost``
        (default: its evidence seconds); ``paid`` is what an earlier stage spent on every candidate, in every
        policy."""
        data, order = self.data, self.order
        cost = data.evidence_s if cost is None else cost
        tasks, width = self.tasks, order.shape[1]
        every = np.arange(order.shape[0])
        ranked = gather_rows(cells, order, self.flat)
        rank = np.cumsum(ranked, axis=1)  # candidates up to each position: the m-th candidate is where rank == m
        spent = np.cumsum(np.where(ranked, gather_rows(cost, order, self.flat), 0.0), axis=1)
        counts = rank[:, -1] if width else np.zeros(order.shape[0], int)
        passing = ranked & self.passing
        pass_at = np.argmax(passing, axis=1)  # the critic's first candidate that passes the evidence
        pass_rank = np.where(passing.any(axis=1), rank[every, pass_at], width + 1)
        first = np.argmax(ranked, axis=1)  # the critic's first candidate
        most = int(counts.max())
        # The critic scores every candidate left in ``cells`` in every policy (it breaks the ties of "tests on all"
        # as it ranks the others): what a critic that calls a model spent on them, where recorded.
        tokens = None if self.tokens is None else int(self.tokens[cells].sum())
        policies: list[tuple[str, int]] = [(f"{prefix}tests on all, then critic", most)]
        m = 1
        while m < most:
            policies.append((f"{prefix}critic, tests on top {m}", m))
            m *= 2
        policies.append((f"{prefix}critic alone", 0))
        out: list[FrontierPolicy] = []
        for name, top in policies:
            # The best tested candidate by evidence, then critic: the first evidence pass within the top m, else
            # the critic's first (a task without candidates: none).
            chosen = np.where(pass_rank <= top, pass_at, first)
            solved = (counts > 0) & self.right[every, chosen]
            last = np.where(counts >= top, np.argmax(rank >= top, axis=1), width - 1)  # the top-th candidate's place
            spend = paid + (float(spent[every, last].sum()) if top else 0.0)
            out.append(FrontierPolicy(
                policy=name, tested=int(np.minimum(counts, top).sum()), container_s=round(spend, 3),
                accuracy=round(float(solved.sum()) / tasks, 6) if tasks else 0.0, throughput=spend,
                accuracy_drop_points=0.0, tokens=tokens,
            ))  # fmt: skip
        return out
