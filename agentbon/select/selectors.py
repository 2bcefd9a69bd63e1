"""The selectors: tests-then-critic (default), tests, critic, majority, soft best-of-N, random, and the oracle.

Each scores every candidate so that the metrics (selected@k over random k-subsets) see exactly the
selector's preferences: equal scores where it is indifferent (ties are broken uniformly), and the
invalid candidates (empty patch, infra error) below everything else.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from agentbon.protocols import Candidate, Critic
from agentbon.select.base import INVALID_SCORE, critic_scores, evidence_tier, invalid_reason, rank, stable_seed
from agentbon.types import Selection, Task, patch_hash

CRITIC_WEIGHT = 0.5
"""Critic scores (in [0, 1]) are scaled below one tier step, so tests always rank first."""


class _Base:
    name = ""
    oracle = False

    def __init__(self, critic: Critic | None = None, seed: int = 0, temperature: float = 0.5):
        self.critic, self.seed, self.temperature = critic, seed, temperature

    def _split(self, candidates: Sequence[Candidate]) -> tuple[list[int], list[float], list[str]]:
        valid, scores, reasons = [], [], []
        for i, c in enumerate(candidates):
            why = invalid_reason(c)
            if why is None:
                valid.append(i)
            scores.append(INVALID_SCORE)
            reasons.append(why or "")
        return valid, scores, reasons

    @property
    def _critic_name(self) -> str:
        return getattr(self.critic, "name", "critic") if self.critic is not None else "no critic"


class TestsThenCritic(_Base):
    """Evidence pass first; the critic orders candidates only within a tier that holds more than one."""

    __test__ = False
    name = "tests-then-critic"

    def select(self, task: Task, candidates: Sequence[Candidate]) -> Selection:
        valid, scores, reasons = self._split(candidates)
        tiers = {i: evidence_tier(candidates[i]) for i in valid}
        sizes = Counter(t for t, _ in tiers.values())
        # Tests decide wherever a tier holds one candidate; the critic runs only where they do not.
        undecided = [i for i in valid if sizes[tiers[i][0]] > 1]
        critic = critic_scores(self.critic, task, candidates, undecided)
        for i in valid:
            tier, label = tiers[i]
            scores[i] = tier + CRITIC_WEIGHT * critic.get(i, 0.0)
            reasons[i] = label + (f"; {self._critic_name} {critic[i]:.3f}" if i in critic else "")
        passing = sizes[2]
        if not valid:
            why = "no valid candidate"
        elif passing == 1:
            why = "the only candidate that passes the evidence tests"
        elif passing > 1:
            why = f"{passing} candidates pass the evidence tests; {self._critic_name} chose among them"
        elif sizes[1]:
            why = f"evidence tests cannot decide; {self._critic_name} chose among {sizes[1]}"
        else:
            why = f"no candidate passes the evidence tests; {self._critic_name} chose among {sizes[0]}"
        return rank(self.name, task, candidates, scores, reasons, why, self.seed)


class TestsOnly(_Base):
    """Evidence tier only: uniform among the candidates of the best tier."""

    name = "tests"

    def select(self, task: Task, candidates: Sequence[Candidate]) -> Selection:
        valid, scores, reasons = self._split(candidates)
        for i in valid:
            scores[i], reasons[i] = float(evidence_tier(candidates[i])[0]), evidence_tier(candidates[i])[1]
        best = max((scores[i] for i in valid), default=None)
        tied = sum(1 for i in valid if scores[i] == best)
        return rank(
            self.name, task, candidates, scores, reasons, f"uniform among {tied} in the best evidence tier", self.seed
        )


class CriticOnly(_Base):
    """The critic's score alone (tests ignored)."""

    name = "critic"

    def select(self, task: Task, candidates: Sequence[Candidate]) -> Selection:
        valid, scores, reasons = self._split(candidates)
        critic = critic_scores(self.critic, task, candidates, valid)
        for i in valid:
            scores[i] = critic.get(i, 0.0)
            reasons[i] = f"{self._critic_name} {scores[i]:.3f}" if i in critic else "no critic"
        return rank(self.name, task, candidates, scores, reasons, f"highest {self._critic_name} score", self.seed)


class Majority(_Base):
    """The most common normalised patch (clusters by ``patch_hash``); ties uniform."""

    name = "majority"

    def select(self, task: Task, candidates: Sequence[Candidate]) -> Selection:
        valid, scores, reasons = self._split(candidates)
        hashes = {i: patch_hash(candidates[i].rollout.patch) for i in valid}
        counts = Counter(hashes.values())
        for i in valid:
            scores[i], reasons[i] = float(counts[hashes[i]]), f"{counts[hashes[i]]} identical patches"
        top = max(counts.values(), default=0)
        return rank(
            self.name,
            task,
            candidates,
            scores,
            reasons,
            f"largest cluster: {top} of {len(valid)} valid candidates",
            self.seed,
        )


class SoftBestOfN(_Base):
    """Samples the winner from softmax(critic / temperature), seeded (Gumbel-max, so every subset is soft too).

    Each candidate's recorded score is its logit ``critic / temperature`` (the report's exact
    selected@k reads these); the ranking is the seeded Gumbel-max draw, so the winner comes first.
    """

    name = "soft-bon"

    def select(self, task: Task, candidates: Sequence[Candidate]) -> Selection:
        valid, scores, reasons = self._split(candidates)
        critic = critic_scores(self.critic, task, candidates, valid)
        gumbel = np.random.default_rng(stable_seed(self.seed, task.task_id, self.name)).gumbel(size=len(candidates))
        logits, drawn = list(scores), list(scores)
        for i in valid:
            logits[i] = critic.get(i, 0.0) / max(self.temperature, 1e-6)
            drawn[i] = logits[i] + float(gumbel[i])
            reasons[i] = f"{self._critic_name} {critic.get(i, 0.0):.3f}; logit {logits[i]:.4g}, drawn {drawn[i]:.4g}"
        selection = rank(
            self.name,
            task,
            candidates,
            drawn,
            reasons,
            f"sampled from softmax({self._critic_name} / {self.temperature:g})",
            self.seed,
        )
        logit_of = {c.rollout.rollout_id: logits[i] for i, c in enumerate(candidates)}
        ranked = [r.model_copy(update={"score": logit_of[r.rollout_id]}) for r in selection.ranked]
        return selection.model_copy(update={"ranked": ranked})


class RandomChoice(_Base):
    """A seeded uniform choice among the valid candidates."""

    name = "random"

    def select(self, task: Task, candidates: Sequence[Candidate]) -> Selection:
        valid, scores, reasons = self._split(candidates)
        draws = np.random.default_rng(stable_seed(self.seed, task.task_id, self.name)).random(len(candidates))
        for i in valid:
            scores[i], reasons[i] = float(draws[i]), "random"
        return rank(self.name, task, candidates, scores, reasons, "uniform among valid candidates", self.seed)


class Oracle(_Base):
    """The grading tests choose: an upper bound, reported as the oracle and never as a selector."""

    name = "oracle"
    oracle = True

    def select(self, task: Task, candidates: Sequence[Candidate]) -> Selection:
        valid, scores, reasons = self._split(candidates)
        for i in valid:
            grade = candidates[i].grade
            scores[i] = 1.0 if grade is not None and grade.status == "pass" else 0.0
            reasons[i] = f"grade {grade.status if grade else 'missing'}"
        solved = sum(1 for i in valid if scores[i] == 1.0)
        return rank(
            self.name,
            task,
            candidates,
            scores,
            reasons,
            f"oracle: {solved} candidates resolve the task",
            self.seed,
            oracle=True,
        )
