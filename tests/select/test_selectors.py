"""Selectors: tiers, where the critic runs, clustering, seeded sampling, the oracle, and the scores' meaning."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from agentbon.config import SelectConfig
from agentbon.errors import ConfigError
from agentbon.metrics import pass_at_k, selected_at_k
from agentbon.protocols import Candidate
from agentbon.select import SELECTORS, make_selector
from agentbon.types import RepoSource, Rollout, Task, TestSet, Verdict

TASK = Task(task_id="t", problem_statement="p", repo=RepoSource(url=".", base_commit="HEAD"), grade=TestSet())


def patch(tag: str) -> str:
    return f"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+{tag}\n"


def cand(i: int, body: str | None, evidence: str = "fail", grade: str = "fail", status: str = "submitted") -> Candidate:
    rollout = Rollout(run_id="r", task_id="t", index=i, status=status, patch=patch(body) if body else "")
    verdict = lambda role, s: Verdict(run_id="r", task_id="t", rollout_id=f"t/{i}", role=role, status=s)  # noqa: E731
    return Candidate(rollout=rollout, evidence=verdict("evidence", evidence), grade=verdict("grade", grade))


class CountingCritic:
    name = "counting"

    def __init__(self, scores: dict[int, float]):
        self.scores, self.calls = scores, []

    def score(self, task, rollout, evidence):
        self.calls.append(rollout.index)
        return self.scores[rollout.index]


def test_unique_evidence_pass_wins_and_critic_only_breaks_ties():
    critic = CountingCritic({1: 0.9, 2: 0.1, 3: 0.5})
    cands = [cand(0, None), cand(1, "a"), cand(2, "b", evidence="pass"), cand(3, "c")]
    sel = make_selector("tests-then-critic", critic=critic).select(TASK, cands)
    assert sel.winner == "t/2" and sel.reason == "the only candidate that passes the evidence tests"
    assert sorted(critic.calls) == [1, 3]  # the lone passer is never scored: tests decided it
    assert [r.rollout_id for r in sel.ranked] == ["t/2", "t/1", "t/3", "t/0"]
    assert sel.ranked[-1].reason == "empty patch"


def test_critic_chooses_among_several_passers():
    critic = CountingCritic({0: 0.2, 1: 0.8, 2: 0.99})
    cands = [cand(0, "a", evidence="pass"), cand(1, "b", evidence="pass"), cand(2, "c")]
    sel = make_selector("tests-then-critic", critic=critic).select(TASK, cands)
    assert sel.winner == "t/1" and "2 candidates pass" in sel.reason and critic.calls == [0, 1]


def test_undecided_evidence_leaves_it_to_the_critic():
    critic = CountingCritic({0: 0.3, 1: 0.6})
    cands = [cand(0, "a", evidence="undecided"), cand(1, "b", evidence="undecided")]
    sel = make_selector("tests-then-critic", critic=critic).select(TASK, cands)
    assert sel.winner == "t/1" and sel.reason.startswith("evidence tests cannot decide")


def test_no_valid_candidate_means_no_winner():
    cands = [cand(0, None), cand(1, "a", status="infra_error")]
    for name in SELECTORS:
        sel = make_selector(name, SelectConfig(critic="none")).select(TASK, cands)
        assert sel.winner is None and all(r.score == -math.inf for r in sel.ranked)
    assert make_selector("random").select(TASK, []).winner is None


def test_tests_only_is_uniform_among_passers():
    cands = [cand(i, str(i), evidence="pass" if i < 3 else "fail") for i in range(5)]
    sel = make_selector("tests", SelectConfig(critic="none")).select(TASK, cands)
    assert {r.score for r in sel.ranked[:3]} == {2.0} and sel.winner in {"t/0", "t/1", "t/2"}


def test_majority_clusters_identical_patches():
    cands = [cand(0, "x"), cand(1, "y"), cand(2, "y"), cand(3, "z"), cand(4, "y")]
    sel = make_selector("majority").select(TASK, cands)
    assert sel.winner in {"t/1", "t/2", "t/4"} and sel.ranked[0].score == 3.0


def test_soft_bon_is_seeded_and_cold_soft_bon_is_argmax():
    critic = CountingCritic({0: 0.1, 1: 0.9, 2: 0.5})
    cands = [cand(0, "a"), cand(1, "b"), cand(2, "c")]
    hot = [
        make_selector("soft-bon", SelectConfig(soft_temperature=5.0), critic=critic, seed=s).select(TASK, cands)
        for s in range(40)
    ]
    assert hot[0] == make_selector("soft-bon", SelectConfig(soft_temperature=5.0), critic=critic, seed=0).select(
        TASK, cands
    )
    assert len({s.winner for s in hot}) == 3  # a high temperature explores
    cold = make_selector("soft-bon", SelectConfig(soft_temperature=1e-4), critic=critic, seed=7).select(TASK, cands)
    assert cold.winner == "t/1"


def test_random_is_seeded():
    cands = [cand(i, str(i)) for i in range(6)]
    a = make_selector("random", seed=3).select(TASK, cands)
    assert a == make_selector("random", seed=3).select(TASK, cands)
    assert {make_selector("random", seed=s).select(TASK, cands).winner for s in range(30)} > {a.winner}


def test_oracle_is_labelled_and_its_scores_give_coverage():
    grades = ["fail", "pass", "fail", "pass", "fail"]
    cands = [cand(i, str(i), grade=g) for i, g in enumerate(grades)]
    sel = make_selector("oracle").select(TASK, cands)
    assert sel.oracle and sel.winner in {"t/1", "t/3"} and sel.reason.startswith("oracle")
    scores = np.array([next(r.score for r in sel.ranked if r.rollout_id == f"t/{i}") for i in range(5)])
    correct = np.array([g == "pass" for g in grades], dtype=float)
    for k in (1, 2, 4):
        assert selected_at_k(scores, correct, k) == pytest.approx(pass_at_k(5, 2, k))


def test_selectors_use_the_configured_critic_or_fail_clearly():
    assert make_selector("critic").critic.name == "heuristic-prior"  # no trained classifier yet: named fallback
    with pytest.raises(ConfigError, match="unknown selector"):
        make_selector("best")
    with pytest.raises(ConfigError, match="needs a model"):
        make_selector("critic", SelectConfig(critic="judge"))


def test_critic_then_tests_trusts_the_critic_over_the_evidence_and_tests_break_its_ties():
    critic = CountingCritic({0: 0.9, 1: 0.4, 2: 0.4, 3: 0.4})
    cands = [cand(0, "a"), cand(1, "b", evidence="pass"), cand(2, "c", evidence="undecided"), cand(3, None)]
    sel = make_selector("critic-then-tests", critic=critic).select(TASK, cands)
    assert sel.winner == "t/0"  # the critic ranks first, even over an evidence pass
    assert [r.rollout_id for r in sel.ranked] == ["t/0", "t/1", "t/2", "t/3"]  # equal scores: pass > undecided
    assert sel.ranked[1].reason == "counting 0.400; evidence pass" and sel.ranked[-1].reason == "empty patch"
    assert sorted(critic.calls) == [0, 1, 2]  # every valid candidate scored, the empty one not
    tests_first = make_selector("tests-then-critic", critic=CountingCritic({0: 0.9, 1: 0.4, 2: 0.4})).select(
        TASK, cands
    )
    assert tests_first.winner == "t/1"


def test_soft_bon_always_has_a_winner_when_one_candidate_is_valid():
    # The lone valid candidate's logit is 0 and its Gumbel draw falls below -1 about 6 % of the time: it must still
    # win, and the empty patch must never rank above it.
    cands = [cand(0, None), cand(1, "a"), cand(2, "b", status="infra_error")]
    for seed in range(200):
        sel = make_selector("soft-bon", critic=CountingCritic({1: 0.0}), seed=seed).select(TASK, cands)
        assert sel.winner == "t/1", seed
        assert sel.ranked[0].rollout_id == "t/1" and all(r.score == -math.inf for r in sel.ranked[1:])


@pytest.mark.parametrize("name", sorted(SELECTORS))
def test_an_invalid_candidate_never_outranks_a_valid_one(name):
    critic = CountingCritic({i: 0.0 for i in range(6)})
    cands = [cand(0, None), cand(1, "a"), cand(2, None), cand(3, "a"), cand(4, "b", evidence="pass")]
    for seed in range(50):
        sel = make_selector(name, critic=critic, seed=seed).select(TASK, cands)
        valid = [r.score > -math.inf for r in sel.ranked]
        assert valid == sorted(valid, reverse=True) and sum(valid) == 3 and sel.winner is not None


def draws(name: str, cands, critic=None, seeds=range(4000), **config):
    winners = [make_selector(name, SelectConfig(**config), critic=critic, seed=s).select(TASK, cands).winner
               for s in seeds]  # fmt: skip
    return {w: winners.count(w) / len(winners) for w in set(winners)}


def test_soft_bon_winner_is_a_softmax_draw_among_valid_candidates_only():
    # Logits 2 and 0 (temperature 0.5): the winner's chances are e^2/(e^2 + 1) and 1/(e^2 + 1), the empty patch 0.
    got = draws("soft-bon", [cand(0, "a"), cand(1, "b"), cand(2, None)], CountingCritic({0: 1.0, 1: 0.0}))
    p = math.exp(2) / (math.exp(2) + 1)
    assert set(got) == {"t/0", "t/1"} and got["t/0"] == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / 4000))


def test_majority_winner_is_from_the_largest_cluster_ties_uniform():
    two_two = draws("majority", [cand(0, "x"), cand(1, "y"), cand(2, "x"), cand(3, "y"), cand(4, "z")])
    assert set(two_two) == {"t/0", "t/1", "t/2", "t/3"}
    x = two_two["t/0"] + two_two["t/2"]
    assert x == pytest.approx(0.5, abs=4 * math.sqrt(0.25 / 4000))
    assert set(draws("majority", [cand(0, "x"), cand(1, "y"), cand(2, "y")], seeds=range(100))) <= {"t/1", "t/2"}


def test_invalid_scores_round_trip_through_the_store_as_standard_json(tmp_path):
    from agentbon.store import RunStore

    store = RunStore(tmp_path / "run")
    sel = make_selector("tests", SelectConfig(critic="none")).select(TASK, [cand(0, None), cand(1, "a")])
    store.save_selection(sel)
    text = (store.path / "events.jsonl").read_text()
    json.loads(text.splitlines()[-1], parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))
    assert store.selections() == [sel] and sel.ranked[-1].score == -math.inf


def test_a_version_1_selection_reads_its_invalid_sentinel_as_minus_infinity():
    from agentbon.types import Selection

    old = {"version": 1, "run_id": "r", "task_id": "t", "selector": "tests", "winner": "t/1", "reason": "",
           "ranked": [{"rollout_id": "t/1", "score": 2.0}, {"rollout_id": "t/0", "score": -1.0, "reason": "empty patch"}]}
    sel = Selection.model_validate(old)
    assert [r.score for r in sel.ranked] == [2.0, -math.inf]
