"""One rule for every selector (docs/estimators.md, "One rule for every selector"): its selected@k is the mean,
over the k-subsets of a task's curve sample, of *that selector run on that subset*.

The report's curves are compared with brute force: on every k-subset the real selector of the registry
(``select()``) chooses among the subset's candidates, and its own draw is averaged exactly instead of trusting one
seeded draw (a tie among equal top scores: uniformly; soft-bon: the softmax over its recorded logits; random: uniformly
among the valid ones). Runs are random and small (N <= 7): ties, invalid and empty candidates, duplicated patches,
flags, ungraded and infra rollouts, unequal n across tasks, batch budgets and early stop.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from unittest import mock

import numpy as np
import pytest

from agentbon.config import SelectConfig
from agentbon.protocols import Candidate
from agentbon.report import build_summary
from agentbon.report.data import load_run
from agentbon.report.summary import report_options, run_curves
from agentbon.select import SELECTORS, make_selector
from agentbon.select.base import stable_seed
from agentbon.store import RunStore
from agentbon.types import Comparison, Flag, RepoSource, Rollout, Selection, Task, TestSet, Verdict


@dataclass(frozen=True)
class Spec:
    """One rollout: ``code`` P/F graded pass/fail, U no grade, I infra error; ``body`` '' is an empty patch."""

    code: str
    body: str = "a"
    evidence: str | None = "fail"
    applies: bool = True
    flagged: bool = False
    critic: float = 0.5


class TableCritic:
    """A critic whose scores are given per rollout (coarse, so they tie)."""

    name = "table"

    def __init__(self, scores: dict[str, float]):
        self.scores = scores

    def score(self, task, rollout, evidence):
        return self.scores[rollout.rollout_id]


class PairTable:
    """A comparator whose preferences are known and need not be transitive: each pair of rollouts gets one of
    0, 1/4, 1/2, 3/4, 1 from a hash of their ids (coarse, so soft Borda counts tie)."""

    name = "pairs"

    def compare(self, task, first, second):
        a, b = first.rollout.rollout_id, second.rollout.rollout_id
        lo, hi = sorted((a, b))
        p = stable_seed("pair", lo, hi) % 5 / 4
        return Comparison(first=a, second=b, p_first=p if a == lo else 1 - p, source="table")


def _patch(body: str) -> str:
    return f"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+{body}\n" if body else ""


def _candidates(run_id: str, task_id: str, specs: list[Spec]) -> list[Candidate]:
    out = []
    for i, s in enumerate(specs):
        status = "infra_error" if s.code == "I" else "submitted"
        rollout = Rollout(run_id=run_id, task_id=task_id, index=i, status=status, patch=_patch(s.body))
        rid = rollout.rollout_id
        grade = None if s.code in "UI" else Verdict(
            run_id=run_id, task_id=task_id, rollout_id=rid, role="grade", status="pass" if s.code == "P" else "fail")
        evidence = None if s.evidence is None or s.code == "I" else Verdict(
            run_id=run_id, task_id=task_id, rollout_id=rid, role="evidence", status=s.evidence,  # type: ignore[arg-type]
            patch_applied=s.applies, flags=[Flag(kind="large_file")] if s.flagged else [])  # fmt: skip
        out.append(Candidate(rollout=rollout, evidence=evidence, grade=grade))
    return out


def _selectors(specs: dict[str, list[Spec]], select: SelectConfig, seed: int) -> dict:
    critic = TableCritic({f"{t}/{i}": s.critic for t, row in specs.items() for i, s in enumerate(row)})
    return {name: make_selector(name, select, critic=critic, seed=seed, comparator=PairTable()) for name in SELECTORS}


def write_run(root, specs: dict[str, list[Spec]], select: SelectConfig | None = None, seed: int = 0,
              budget_first: int | None = None, early: dict[str, int] | None = None) -> RunStore:
    """A run store as a run writes it: rollouts, verdicts, and every registry selector's choice among all of a task's
    finished rollouts (as orchestrate/selection_stage.py runs them)."""
    select = select or SelectConfig(critic="none")
    n = max(len(row) for row in specs.values())
    store = RunStore(root / "run")
    tasks = [Task(task_id=t, problem_statement="p", repo=RepoSource(url=".", base_commit="HEAD"), grade=TestSet())
             for t in specs]  # fmt: skip
    config: dict = {"n": n, "select": {"selectors": list(SELECTORS), "allow_flags": list(select.allow_flags),
                                       "flagged_fallback": select.flagged_fallback}}  # fmt: skip
    if budget_first is not None:
        config.update(budget=n * len(specs), budget_first=budget_first)
    selectors = _selectors(specs, select, seed)
    with mock.patch("agentbon.store.os.fsync"):
        store.create(config, tasks)
        for task in tasks:
            cands = _candidates(store.run_id, task.task_id, specs[task.task_id])
            for c in cands:
                store.save_rollout(c.rollout)
                for v in (c.grade, c.evidence):
                    if v is not None:
                        store.save_verdict(v)
            finished = [c for c in cands if c.rollout.status != "infra_error"]
            for selector in selectors.values():
                store.save_selection(selector.select(task, finished))
        for task_id, fixed in (early or {}).items():
            store.append("early_stop", task_id=task_id, fixed=fixed, rollouts_not_run=0, est_sandbox_s_saved=0.0)
    return store


def draw_chances(selection: Selection, estimator: str) -> dict[str, float]:
    """The chance of each rollout to be the winner of one selection, its draw averaged out: the top score with ties
    uniform (a subset's majority scores are its cluster sizes), a uniform choice, or a softmax over logits. The
    recorded winner must lie in that distribution's support."""
    valid = [r for r in selection.ranked if r.score > -math.inf]
    if selection.winner is None:
        assert not valid, f"{selection.selector}: valid candidates but no winner"
        return {}
    assert selection.winner in {r.rollout_id for r in valid}, f"{selection.selector}: the winner is not valid"
    if estimator in ("rank", "majority", "tournament"):  # a tournament's subset scores are its soft Borda counts
        top = max(r.score for r in valid)
        tied = [r.rollout_id for r in valid if r.score == top]
        assert selection.winner in tied, f"{selection.selector}: the winner is not top-scored"
        return {rid: 1 / len(tied) for rid in tied}
    if estimator == "uniform":
        return {r.rollout_id: 1 / len(valid) for r in valid}
    if estimator == "softmax":
        top = max(r.score for r in valid)
        w = {r.rollout_id: math.exp(r.score - top) for r in valid}
        return {rid: v / sum(w.values()) for rid, v in w.items()}
    raise AssertionError(f"no brute-force draw for estimator {estimator!r}: add one here")


def curve_sample(specs: list[Spec], fixed: int) -> list[int]:
    """The rollouts a task's curves draw from: graded pass or fail, within the part fixed in advance."""
    return [i for i, s in enumerate(specs) if s.code in "PF" and i < fixed]


def brute(selector, task_id: str, cands: list[Candidate], sample: list[int], k: int) -> float:
    """Mean over every k-subset of ``sample`` of the selector's expected correctness on that subset."""
    task = Task(task_id=task_id, problem_statement="p", repo=RepoSource(url=".", base_commit="HEAD"), grade=TestSet())
    grade = {c.rollout.rollout_id: c.grade is not None and c.grade.status == "pass" for c in cands}
    total, count = 0.0, 0
    for subset in itertools.combinations(sample, k):
        chances = draw_chances(selector.select(task, [cands[i] for i in subset]), type(selector).estimator)
        total += sum(p * grade[rid] for rid, p in chances.items())
        count += 1
    return total / count


def check_run(tmp_path, specs, select=None, seed=0, budget_first=None, early=None) -> int:
    """Every selector's per-task curve against brute force; returns how many values were compared."""
    store = write_run(tmp_path, specs, select, seed, budget_first, early)
    data = load_run(store)
    curves = run_curves(data, report_options(data.config))
    rows = {data.task_ids[r]: i for i, r in enumerate(np.flatnonzero(curves.included))}
    selectors = _selectors(specs, select or SelectConfig(critic="none"), seed)
    assert set(curves.per_task_selected) == set(SELECTORS)  # the report prints every selector of the registry
    compared = 0
    for task_id, row in specs.items():
        fixed = min(early.get(task_id, len(row)) if early else len(row), budget_first or len(row))
        sample = curve_sample(row, fixed)
        if not sample:
            assert task_id not in rows
            continue
        cands = _candidates(store.run_id, task_id, row)
        for name, selector in selectors.items():
            got = curves.per_task_selected[name][rows[task_id]]
            for j, k in enumerate(curves.ks):
                if k <= len(sample):
                    want = brute(selector, task_id, cands, sample, k)
                    assert got[j] == pytest.approx(want, abs=1e-9), (name, task_id, k, [s.code for s in row])
                    compared += 1
    return compared


def test_majority_votes_inside_each_subset(tmp_path):
    # Three identical wrong patches, two identical right ones (the example): voting inside each subset.
    row = [Spec("F", "w"), Spec("F", "w"), Spec("F", "w"), Spec("P", "r"), Spec("P", "r")]
    s = build_summary(write_run(tmp_path, {"t": row}))
    mean = s["metrics"]["selectors"]["majority"]["selected"]["mean"]
    assert s["ks"] == [1, 2, 4, 5]
    assert mean[1] == pytest.approx(0.4) and mean[2] == pytest.approx(0.3)
    assert mean == pytest.approx([0.4, 0.4, 0.3, 0.0])  # k = 5: the wrong cluster wins outright
    assert s["metrics"]["selectors"]["majority"]["winners_resolved"] == 0


def _random_specs(rng: np.random.Generator) -> tuple[dict[str, list[Spec]], int]:
    big = int(rng.integers(1, 8))
    specs = {}
    for t in range(int(rng.integers(1, 4))):
        n = big if t == 0 else int(rng.integers(1, big + 1))  # unequal n across tasks
        row = []
        for i in range(n):
            code = str(rng.choice(list("PF" if t == i == 0 else "PPFFFUI")))  # t0 has a sample: nothing vacuous
            row.append(Spec(
                code=code,
                body=str(rng.choice(["a", "a", "b", "c", "d", ""])),  # duplicated and empty patches
                evidence=[None, "pass", "fail", "undecided"][int(rng.integers(0, 4))],
                applies=bool(rng.random() > 0.1),
                flagged=bool(rng.random() < 0.1),
                critic=float(rng.choice([0.0, 0.25, 0.5, 0.5, 1.0])),  # coarse: ties
            ))  # fmt: skip
        specs[f"t{t}"] = row
    return specs, big


@pytest.mark.parametrize("case", range(24))
def test_every_selector_is_itself_on_every_subset(tmp_path, case):
    rng = np.random.default_rng(1000 + case)
    specs, big = _random_specs(rng)
    budget_first = int(rng.integers(1, big + 1)) if case % 4 == 1 else None
    early = {t: int(rng.integers(1, big + 1)) for t in specs if rng.random() < 0.5} if case % 4 == 2 else None
    allow = ["large_file"] if case % 6 == 5 else []
    select = SelectConfig(critic="none", allow_flags=allow, soft_temperature=float(rng.choice([0.25, 0.5, 2.0])),
                          flagged_fallback="flagged" if case % 3 == 0 else "none")  # fmt: skip
    assert check_run(tmp_path, specs, select, seed=case, budget_first=budget_first, early=early) > 0


def test_the_flagged_fallback_is_decided_inside_each_subset(tmp_path):
    # select.flagged_fallback = flagged chooses among flagged candidates where a subset holds no other: a subset
    # of the flagged right patch alone chooses it, though the task has an unflagged candidate.
    row = [Spec("P", "a", flagged=True), Spec("F", "b"), Spec("F", "c", flagged=True), Spec("F", "")]
    assert check_run(tmp_path, {"t": row}, SelectConfig(critic="none", flagged_fallback="flagged")) == len(SELECTORS) * 3  # every selector at k = 1, 2, 4


def test_majority_estimated_on_request_says_so(tmp_path):
    row = [Spec("F", "w"), Spec("F", "w"), Spec("F", "w"), Spec("P", "r"), Spec("P", "r"), Spec("F", "v")]
    block = build_summary(write_run(tmp_path, {"t": row}), majority="estimate")["metrics"]["selectors"]["majority"]
    assert block["estimator"] == "majority" and block["estimate"]["draws"] == 64
    exact = [brute(_selectors({"t": row}, SelectConfig(critic="none"), 0)["majority"], "t",
                   _candidates("run", "t", row), list(range(6)), k) for k in (1, 2, 4, 6)]  # fmt: skip
    se = [v or 0.0 for v in block["estimate"]["se"]]
    assert all(abs(m - e) <= 5 * s + 1e-6 for m, e, s in zip(block["selected"]["mean"], exact, se, strict=True))
