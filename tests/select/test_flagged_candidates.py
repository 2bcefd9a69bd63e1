"""Flagged candidates: no selector picks one unless select.allow_flags accepts the kind or the fallback allows it.

Only the evidence verdict's flags count (the grade is hidden from every selector but the oracle), and the oracle
ranks by the grade alone (docs/security.md, Flags).
"""

from __future__ import annotations

import pytest

from agentbon.config import SelectConfig
from agentbon.protocols import Candidate
from agentbon.select import INVALID_SCORE, SELECTORS, make_selector
from agentbon.types import Flag, RepoSource, Rollout, Task, TestSet, Verdict

TASK = Task(task_id="t", problem_statement="p", repo=RepoSource(url=".", base_commit="HEAD"), grade=TestSet())
NON_ORACLE = [name for name in SELECTORS if name != "oracle"]


class ConstantCritic:
    """Scores every candidate 0.5 except the ones named, which get their own score."""

    name = "constant"

    def __init__(self, scores: dict[int, float] | None = None):
        self.scores = scores or {}

    def score(self, task, rollout, evidence):
        return self.scores.get(rollout.index, 0.5)


def cand(
    i: int,
    evidence: str = "pass",
    grade: str = "pass",
    flags: tuple[str, ...] = (),
    grade_flags: tuple[str, ...] = (),
    tampered: tuple[str, ...] = (),
) -> Candidate:
    body = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+same\n"
    rollout = Rollout(run_id="r", task_id="t", index=i, status="submitted", patch=body)

    def verdict(role: str, status: str, kinds: tuple[str, ...], paths: tuple[str, ...]) -> Verdict:
        return Verdict(
            run_id="r", task_id="t", rollout_id=f"t/{i}", role=role, status=status,  # type: ignore[arg-type]
            flags=[Flag(kind=k, detail=f"{k} seen") for k in kinds], tampered=list(paths),  # type: ignore[arg-type]
        )  # fmt: skip

    return Candidate(
        rollout=rollout,
        evidence=verdict("evidence", evidence, flags, tampered),
        grade=verdict("grade", grade, grade_flags, ()),
    )


def build(name: str, **config: object):
    return make_selector(name, SelectConfig(critic="none", **config), critic=ConstantCritic(), seed=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", NON_ORACLE)
def test_no_selector_picks_a_flagged_candidate_over_a_clean_one(name):
    # The flagged candidates pass the evidence; the clean one fails it: the clean one still wins.
    cands = [cand(0, flags=("forged",)), cand(1, evidence="fail"), cand(2, tampered=("tests/test_x.py",))]
    sel = build(name).select(TASK, cands)
    assert sel.winner == "t/1"
    by_id = {r.rollout_id: r for r in sel.ranked}
    assert by_id["t/0"].score == INVALID_SCORE and by_id["t/0"].reason == "flagged: forged"
    assert by_id["t/2"].reason == "flagged: tampered"  # a legacy tampered list counts as the tampered kind
    assert "2 flagged candidates left out (forged, tampered)" in sel.reason


@pytest.mark.parametrize("name", NON_ORACLE)
def test_all_flagged_means_no_winner_and_the_reason_says_why(name):
    cands = [cand(0, flags=("disagreement",)), cand(1, flags=("suspicious_code", "binary"))]
    sel = build(name).select(TASK, cands)
    assert sel.winner is None
    assert (
        sel.reason
        == "no candidate without a flag (flagged: binary, disagreement, suspicious_code; see select.allow_flags)"
    )


@pytest.mark.parametrize("name", NON_ORACLE)
def test_fallback_chooses_among_flagged_ones_and_says_so(name):
    cands = [cand(0, flags=("large_file",)), cand(1, evidence="fail", flags=("large_file",))]
    sel = build(name, flagged_fallback="flagged").select(TASK, cands)
    assert sel.winner in {"t/0", "t/1"}
    assert sel.reason.startswith("every candidate is flagged (large_file), select.flagged_fallback chose among them")
    assert all(r.reason.endswith("flagged: large_file") and r.score > INVALID_SCORE for r in sel.ranked)
    if name in ("tests-then-critic", "tests"):
        assert sel.winner == "t/0"  # the evidence still ranks them


def test_fallback_does_not_apply_while_a_clean_candidate_exists():
    cands = [cand(0, flags=("forged",)), cand(1, evidence="fail")]
    sel = build("tests", flagged_fallback="flagged").select(TASK, cands)
    assert sel.winner == "t/1" and sel.ranked[-1].score == INVALID_SCORE


def test_allowed_kinds_do_not_disqualify():
    cands = [cand(0, tampered=("tests/test_x.py",)), cand(1, evidence="fail")]
    assert build("tests-then-critic", allow_flags=["tampered"]).select(TASK, cands).winner == "t/0"
    both = [cand(0, flags=("tampered", "forged")), cand(1, evidence="fail")]
    assert build("tests-then-critic", allow_flags=["tampered"]).select(TASK, both).winner == "t/1"


def test_grade_flags_never_reach_a_selector():
    # Only the grade saw a forgery: the selectors must not know it (that would be selecting with hidden tests).
    cands = [cand(0, grade="fail", grade_flags=("forged",)), cand(1, evidence="fail")]
    for name in NON_ORACLE:
        sel = build(name).select(TASK, cands)
        assert all(not r.reason.startswith("flagged") for r in sel.ranked), name
    assert build("tests").select(TASK, cands).winner == "t/0"


def test_oracle_ranks_by_grade_alone_and_names_the_flags():
    cands = [cand(0, flags=("tampered",)), cand(1, grade="fail"), cand(2, grade="fail", grade_flags=("forged",))]
    sel = build("oracle").select(TASK, cands)
    assert sel.oracle and sel.winner == "t/0"
    reasons = {r.rollout_id: r.reason for r in sel.ranked}
    assert reasons == {"t/0": "grade pass; flags: tampered", "t/1": "grade fail", "t/2": "grade fail; flags: forged"}


def test_the_critic_never_scores_a_disqualified_candidate():
    class Counting(ConstantCritic):
        calls: list[int] = []

        def score(self, task, rollout, evidence):
            self.calls.append(rollout.index)
            return 0.5

    critic = Counting()
    cands = [cand(0, flags=("forged",)), cand(1), cand(2)]
    make_selector("critic", SelectConfig(critic="none"), critic=critic).select(TASK, cands)
    assert sorted(critic.calls) == [1, 2]


def test_select_config_rejects_an_unknown_kind():
    with pytest.raises(ValueError, match="allow_flags"):
        SelectConfig(allow_flags=["tamperd"])  # type: ignore[list-item]
