"""The pairwise judge (asked in both orders, position bias cancelled), the scale judge (expected rating from the
logprobs) and the tournament selectors that use them, against a scripted model whose preferences are known."""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from agentbon.config import SelectConfig
from agentbon.critic import make_critic
from agentbon.critic.pairwise import CriticComparator, PairwiseJudge
from agentbon.critic.scale import ScaleJudge, expected_score, scale_distribution
from agentbon.protocols import Candidate, ChatResponse
from agentbon.select import make_selector
from agentbon.types import RepoSource, Rollout, Task, TestSet, Usage, Verdict

TASK = Task(task_id="t", problem_statement="fix it", repo=RepoSource(url=".", base_commit="HEAD"), grade=TestSet())


def candidate(i: int, body: str, evidence: str = "pass") -> Candidate:
    patch = f"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+{body}\n"
    rollout = Rollout(run_id="r", task_id="t", index=i, status="submitted", patch=patch)
    verdict = Verdict(run_id="r", task_id="t", rollout_id=rollout.rollout_id, role="evidence", status=evidence)  # type: ignore[arg-type]
    return Candidate(rollout=rollout, evidence=verdict)


def logprob_reply(probs: dict[str, float], tokens: int = 10) -> ChatResponse:
    top = [{"token": t, "logprob": math.log(p)} for t, p in probs.items() if p > 0]
    best = max(probs, key=lambda t: probs[t])
    return ChatResponse(content=best, usage=Usage(prompt_tokens=tokens, completion_tokens=1, calls=1),
                        logprobs=[{"token": best, "logprob": math.log(probs[best]), "top_logprobs": top}])  # fmt: skip


class BiasedComparer:
    """A model that knows each patch's quality (``+good`` > ``+ok`` > ``+bad``) and also prefers whatever it is shown
    first by ``bias``: p(A) = clip(1/2 + bias + (quality(A) − quality(B)) / 4)."""

    QUALITY = {"good": 1.0, "ok": 0.5, "bad": 0.0}

    def __init__(self, bias: float = 0.2, logprobs: bool = True):
        self.name, self.bias, self.logprobs, self.calls = "m", bias, logprobs, 0

    def chat(self, messages: Any, *, seed: int | None = None, **sampling: Any) -> ChatResponse:
        self.calls += 1
        text = messages[0]["content"]
        a, b = re.findall(r"^\+(good|ok|bad)$", text, re.M)
        p = min(max(0.5 + self.bias + (self.QUALITY[a] - self.QUALITY[b]) / 4, 0.01), 0.99)
        if not self.logprobs:
            return ChatResponse(content="A" if p >= 0.5 else "B", usage=Usage(prompt_tokens=5, completion_tokens=1))
        return logprob_reply({"A": p, "B": 1 - p})


def test_both_orders_cancel_the_position_bias():
    model = BiasedComparer(bias=0.2)
    judge = PairwiseJudge(model)
    c = judge.compare(TASK, candidate(0, "good"), candidate(1, "ok"))
    # Asked with good as A: 1/2 + 0.2 + 1/8 = 0.825; with ok as A: p(A) = 1/2 + 0.2 - 1/8 = 0.575, so good is
    # better with 0.425. The mean, 0.625, is the bias-free 1/2 + 1/8.
    assert c.p_asked_first == pytest.approx(0.825) and c.p_asked_second == pytest.approx(0.425)
    assert c.p_first == pytest.approx(0.625) and c.source == "logprobs" and c.tokens == 22
    again = judge.compare(TASK, candidate(1, "ok"), candidate(0, "good"))  # the same pair, asked the other way
    assert model.calls == 2  # cached: never asked twice
    assert again.first.endswith("/1") and again.p_first == pytest.approx(0.375)


def test_a_judge_without_logprobs_reads_the_answers():
    judge = PairwiseJudge(BiasedComparer(bias=0.3, logprobs=False))
    c = judge.compare(TASK, candidate(0, "bad"), candidate(1, "ok"))
    # Either order answers A (the bias wins): the two answers cancel to a tie.
    assert c.p_first == 0.5 and c.source == "parsed"


@pytest.mark.parametrize("budget", [None, 1, 2])
def test_the_tournament_spends_its_budget_and_records_every_comparison(budget):
    model = BiasedComparer(bias=0.25)
    cands = [candidate(0, "bad"), candidate(1, "good"), candidate(2, "ok"), candidate(3, "ok", evidence="fail")]
    select = SelectConfig(critic="none", comparator="judge", comparisons=budget)
    selection = make_selector("tournament", select, model=model).select(TASK, cands)
    pairs = 6 if budget is None else budget
    assert len(selection.comparisons) == pairs and model.calls == 2 * pairs
    assert all(c.tokens == 22 for c in selection.comparisons)
    if budget is None:
        assert selection.winner == "t/1"  # the best patch, though the model favours whatever it sees first
    hybrid = make_selector("tests-then-tournament", select, model=BiasedComparer(bias=0.25)).select(TASK, cands)
    # The three evidence passes form the pool (3 pairs); the failing candidate is never compared.
    assert {(c.first, c.second) for c in hybrid.comparisons} <= {("t/0", "t/1"), ("t/0", "t/2"), ("t/1", "t/2")}
    assert len(hybrid.comparisons) == min(3, pairs)
    ranked = {r.rollout_id: r for r in hybrid.ranked}
    assert ranked["t/3"].score < 1.0 <= min(ranked[f"t/{i}"].score for i in range(3))  # tier first


def test_critic_comparator_ties_equal_scores():
    class Table:
        name = "table"

        def score(self, task, rollout, evidence):
            return {0: 0.2, 1: 0.9, 2: 0.2}[rollout.index]

    comp = CriticComparator(Table())
    assert comp.compare(TASK, candidate(0, "a"), candidate(1, "b")).p_first == 0.0
    assert comp.compare(TASK, candidate(0, "a"), candidate(2, "c")).p_first == 0.5
    assert CriticComparator(None).compare(TASK, candidate(0, "a"), candidate(1, "b")).p_first == 0.5


def test_the_scale_judge_reads_the_expected_rating():
    dist, source = scale_distribution(logprob_reply({"7": 0.5, "9": 0.25, "3": 0.125, "x": 0.125}))
    assert source == "logprobs" and sum(dist) == pytest.approx(1.0)
    assert dist[6] == pytest.approx(0.5 / 0.875)  # renormalised over the scale's digits
    assert expected_score([0.0] * 8 + [1.0]) == 1.0 and expected_score([1.0] + [0.0] * 8) == 0.0
    mean = (7 * 0.5 + 9 * 0.25 + 3 * 0.125) / 0.875
    assert expected_score(dist) == pytest.approx((mean - 1) / 8)
    assert scale_distribution(ChatResponse(content="I'd say 6."))[0][5] == 1.0
    assert scale_distribution(ChatResponse(content="no idea"))[1] == "unparsed"


def test_scale_judge_over_criteria_and_repeats_records_its_distributions():
    class Rater:
        name = "m"

        def __init__(self):
            self.calls: list[dict[str, Any]] = []

        def chat(self, messages, *, seed=None, **sampling):
            self.calls.append({"seed": seed, **sampling})
            style = "style" in messages[0]["content"]
            return logprob_reply({"9": 1.0} if style else ({"5": 1.0} if seed == 0 else {"1": 1.0}), tokens=4)

    model = Rater()
    judge = make_critic("scale-judge", model=model, config=SelectConfig(
        critic="scale-judge", scale_criteria=["correctness", "style"], scale_repeats=2, scale_temperature=0.7))  # fmt: skip
    assert isinstance(judge, ScaleJudge)
    c = candidate(0, "good")
    # correctness: ratings 5 and 1 (mean 3, score 1/4); style: 9 twice (score 1); the mean of the criteria.
    assert judge.score(TASK, c.rollout, c.evidence) == pytest.approx((0.25 + 1.0) / 2)
    assert [call["seed"] for call in model.calls] == [0, 1, 0, 1] and model.calls[0]["temperature"] == 0.7
    assert judge.distributions["t/0"]["correctness"][0] == 0.5 and judge.distributions["t/0"]["correctness"][4] == 0.5
    assert judge.tokens["t/0"] == 4 * 5
    selection = make_selector("critic", SelectConfig(critic="scale-judge"), critic=judge).select(TASK, [c])
    assert selection.ranked[0].scale == judge.distributions["t/0"] and selection.ranked[0].tokens == 20


def test_a_run_gives_its_judges_the_served_model():
    from agentbon.config import RunConfig
    from agentbon.orchestrate.factories import ServedLater, default_selector

    served = {"endpoint": "http://127.0.0.1:9/v1", "name": "m"}
    config = RunConfig(model=served, select={"selectors": ["tournament", "critic"], "critic": "scale-judge"})
    tournament = default_selector("tournament", config)
    assert isinstance(tournament.comparator, PairwiseJudge)  # type: ignore[attr-defined]
    assert isinstance(default_selector("critic", config).critic, ScaleJudge)  # type: ignore[attr-defined]
    # Before the server the run starts is up (the preflight builds the selectors): a stand-in, never called.
    later = default_selector("tests-then-tournament", RunConfig(select={"selectors": ["tests-then-tournament"]}))
    assert isinstance(later.comparator.model, ServedLater)  # type: ignore[attr-defined]
    pairs = RunConfig(model=served, select={"selectors": ["tournament"], "comparator": "critic"})
    assert isinstance(default_selector("tournament", pairs).comparator, CriticComparator)  # type: ignore[attr-defined]
