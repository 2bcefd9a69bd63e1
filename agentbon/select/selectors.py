"""The selectors: tests-then-critic (default), critic-then-tests, tests, critic, majority, soft best-of-N, random, the
pairwise tournaments (tournament, tests-then-tournament), and the oracle.

Each scores every candidate so that the metrics (selected@k over random k-subsets) see exactly the
selector's preferences: equal scores where it is indifferent (ties are broken uniformly), and the
invalid candidates (empty patch, infra error) below everything else.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from agentbon.metrics.tournament import UNIT, next_pair, soft_borda, units
from agentbon.protocols import Candidate, Critic
from agentbon.select.base import (
    FLAGGED,
    INVALID_SCORE,
    Estimator,
    blocking_flags,
    critic_scores,
    evidence_tier,
    invalid_reason,
    rank,
    stable_seed,
)
from agentbon.types import Comparison, Selection, Task, patch_hash

if TYPE_CHECKING:
    from agentbon.critic.pairwise import Comparator

CRITIC_WEIGHT = 0.5
"""Critic scores (in [0, 1]) are scaled below one tier step, so tests always rank first."""
TIE_BREAK = 1e-8
"""``critic-then-tests``: an evidence tier step, below the critic's rounding (1e-6), so the critic always ranks first."""


class BaseSelector:
    """Shared by every selector: which candidates it may choose (flags included), and the fallback when none."""

    name = ""
    oracle = False
    estimator: ClassVar[Estimator] = "rank"
    """How the report computes this selector's selected@k (:data:`agentbon.select.base.Estimator`)."""
    uses_critic: ClassVar[bool] = False
    """Whether it reads a critic (``make_selector`` builds the configured one)."""
    reads_tests: ClassVar[bool] = True
    """Whether it reads the evidence tests (the frontier prices one that does not at no verification)."""
    uses_comparator: ClassVar[bool] = False
    """Whether it compares candidates pairwise (``make_selector`` builds the configured comparator)."""

    def __init__(
        self,
        critic: Critic | None = None,
        seed: int = 0,
        temperature: float = 0.5,
        allow_flags: Collection[str] = (),
        flagged_fallback: str = "none",
        comparator: Comparator | None = None,
        comparisons: int | None = None,
    ):
        self.critic, self.seed, self.temperature = critic, seed, temperature
        self.allow_flags, self.flagged_fallback = frozenset(allow_flags), flagged_fallback
        self.comparator, self.comparisons = comparator, comparisons

    def select(self, task: Task, candidates: Sequence[Candidate]) -> Selection:
        """The selector's choice; a candidate with a blocking flag is chosen only by the fallback (docs/security.md)."""
        flagged = {i: kinds for i, c in enumerate(candidates) if (kinds := self._blocking(c))}
        fallback = (
            self.flagged_fallback == "flagged"
            and bool(flagged)
            and all(i in flagged for i, c in enumerate(candidates) if invalid_reason(c) is None)
        )
        selection = self._select(task, candidates, allowed=set(flagged) if fallback else set())
        kinds = sorted({k for ks in flagged.values() for k in ks})
        if self.flagged_fallback == "flagged" and flagged and not fallback:
            selection = self._with_fallback_scores(task, [candidates[i] for i in flagged], selection)
        if not fallback:
            if flagged and selection.winner is None:
                why = f"no candidate without a flag (flagged: {', '.join(kinds)}; see select.allow_flags)"
                return selection.model_copy(update={"reason": why})
            if flagged:
                left = f"; {len(flagged)} flagged candidate{'s' * (len(flagged) > 1)} left out ({', '.join(kinds)})"
                return selection.model_copy(update={"reason": selection.reason + left})
            return selection
        by_id = {candidates[i].rollout.rollout_id: ks for i, ks in flagged.items()}
        ranked = [
            r.model_copy(update={"reason": f"{r.reason}; {FLAGGED}{', '.join(by_id[r.rollout_id])}"})
            if r.rollout_id in by_id else r
            for r in selection.ranked
        ]  # fmt: skip
        why = f"every candidate is flagged ({', '.join(kinds)}), select.flagged_fallback chose among them: "
        return selection.model_copy(update={"ranked": ranked, "reason": why + selection.reason})

    def _select(self, task: Task, candidates: Sequence[Candidate], allowed: set[int]) -> Selection:
        raise NotImplementedError

    def _with_fallback_scores(self, task: Task, flagged: list[Candidate], selection: Selection) -> Selection:
        """``selection`` with each flagged candidate's score among the flagged ones alone (``Ranked.fallback_score``):
        a k-subset without another candidate chooses among them (select.flagged_fallback), and the report replays
        that choice in every subset from these scores (docs/estimators.md, "The flagged fallback")."""
        among = self._select(task, flagged, allowed=set(range(len(flagged))))
        alone = {r.rollout_id: r for r in among.ranked}
        ranked = [
            r.model_copy(update={"fallback_score": (a := alone[r.rollout_id]).score, "tokens": r.tokens or a.tokens})
            if r.rollout_id in alone else r
            for r in selection.ranked
        ]  # fmt: skip
        # A tournament's comparisons among the flagged ones: the report reads them where the fallback chooses.
        pairs = {(c.first, c.second) for c in selection.comparisons}
        more = [c for c in among.comparisons if (c.first, c.second) not in pairs]
        return selection.model_copy(update={"ranked": ranked, "comparisons": selection.comparisons + more})

    def _blocking(self, candidate: Candidate) -> list[str]:
        if self.oracle or invalid_reason(candidate) is not None:
            return []  # the oracle grades, it does not select: flags never move it (docs/security.md)
        return blocking_flags(candidate, self.allow_flags)

    def _split(
        self, candidates: Sequence[Candidate], allowed: Collection[int] = ()
    ) -> tuple[list[int], list[float], list[str]]:
        """Positions a selector may choose, and the invalid score and reason of every other one."""
        valid, scores, reasons = [], [], []
        for i, c in enumerate(candidates):
            why = invalid_reason(c)
            if why is None and i not in allowed and (kinds := self._blocking(c)):
                why = FLAGGED + ", ".join(kinds)
            if why is None:
                valid.append(i)
            scores.append(INVALID_SCORE)
            reasons.append(why or "")
        return valid, scores, reasons

    @property
    def _critic_name(self) -> str:
        return getattr(self.critic, "name", "critic") if self.critic is not None else "no critic"


class TestsThenCritic(BaseSelector):
    """Evidence pass first; the critic orders candidates only within a tier that holds more than one."""

    __test__ = False
    name = "tests-then-critic"
    uses_critic = True

    def _select(self, task: Task, candidates: Sequence[Candidate], allowed: set[int]) -> Selection:
        valid, scores, reasons = self._split(candidates, allowed)
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


class CriticThenTests(BaseSelector):
    """The critic ranks; the evidence tier breaks ties between equal critic scores (a discrete critic, such as the
    heuristic prior, ties often). Beside ``tests-then-critic`` it shows what trusting the critic first costs or buys."""

    __test__ = False
    name = "critic-then-tests"
    uses_critic = True

    def _select(self, task: Task, candidates: Sequence[Candidate], allowed: set[int]) -> Selection:
        valid, scores, reasons = self._split(candidates, allowed)
        critic = critic_scores(self.critic, task, candidates, valid)
        for i in valid:
            tier, label = evidence_tier(candidates[i])
            # Tier steps (0, 1, 2) scaled far below any critic difference the rounding keeps.
            scores[i] = round(critic.get(i, 0.0), 6) + TIE_BREAK * tier
            reasons[i] = (f"{self._critic_name} {critic[i]:.3f}; " if i in critic else "no critic; ") + label
        why = f"highest {self._critic_name} score; the evidence tests break ties"
        return rank(self.name, task, candidates, scores, reasons, why, self.seed)


class TestsOnly(BaseSelector):
    """Evidence tier only: uniform among the candidates of the best tier."""

    name = "tests"

    def _select(self, task: Task, candidates: Sequence[Candidate], allowed: set[int]) -> Selection:
        valid, scores, reasons = self._split(candidates, allowed)
        for i in valid:
            scores[i], reasons[i] = float(evidence_tier(candidates[i])[0]), evidence_tier(candidates[i])[1]
        best = max((scores[i] for i in valid), default=None)
        tied = sum(1 for i in valid if scores[i] == best)
        return rank(
            self.name, task, candidates, scores, reasons, f"uniform among {tied} in the best evidence tier", self.seed
        )


class CriticOnly(BaseSelector):
    """The critic's score alone (tests ignored)."""

    name = "critic"
    uses_critic = True

    def _select(self, task: Task, candidates: Sequence[Candidate], allowed: set[int]) -> Selection:
        valid, scores, reasons = self._split(candidates, allowed)
        critic = critic_scores(self.critic, task, candidates, valid)
        for i in valid:
            scores[i] = critic.get(i, 0.0)
            reasons[i] = f"{self._critic_name} {scores[i]:.3f}" if i in critic else "no critic"
        selection = rank(self.name, task, candidates, scores, reasons, f"highest {self._critic_name} score", self.seed)
        spent: dict[str, int] = getattr(self.critic, "tokens", None) or {}
        if not spent:
            return selection
        # What a critic that calls a model spent on each candidate: the report's frontier counts it as the cost of
        # ranking by the critic (report/frontier.py); a scale judge's score distributions with it.
        scored = {candidates[i].rollout.rollout_id for i in critic}
        scale: dict[str, dict[str, list[float]]] = getattr(self.critic, "distributions", None) or {}
        ranked = [r.model_copy(update={"tokens": spent.get(r.rollout_id), "scale": scale.get(r.rollout_id)})
                  if r.rollout_id in scored else r.model_copy(update={"tokens": None})
                  for r in selection.ranked]  # fmt: skip
        return selection.model_copy(update={"ranked": ranked})


class Majority(BaseSelector):
    """The most common normalised patch (clusters by ``patch_hash``); ties uniform. Its recorded score is the
    candidate's cluster size among the candidates it saw, so the report votes again inside each k-subset."""

    name = "majority"
    estimator = "majority"
    reads_tests = False

    def _select(self, task: Task, candidates: Sequence[Candidate], allowed: set[int]) -> Selection:
        valid, scores, reasons = self._split(candidates, allowed)
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


class SoftBestOfN(BaseSelector):
    """Samples the winner from softmax(critic / temperature), seeded (Gumbel-max, so every subset is soft too).

    Each candidate's recorded score is its logit ``critic / temperature`` (the report's exact
    selected@k reads these); the ranking is the seeded Gumbel-max draw, so the winner comes first.
    """

    name = "soft-bon"
    estimator = "softmax"
    uses_critic = True
    reads_tests = False

    def _select(self, task: Task, candidates: Sequence[Candidate], allowed: set[int]) -> Selection:
        valid, scores, reasons = self._split(candidates, allowed)
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


class RandomChoice(BaseSelector):
    """A seeded uniform choice among the valid candidates."""

    name = "random"
    estimator = "uniform"
    reads_tests = False

    def _select(self, task: Task, candidates: Sequence[Candidate], allowed: set[int]) -> Selection:
        valid, scores, reasons = self._split(candidates, allowed)
        draws = np.random.default_rng(stable_seed(self.seed, task.task_id, self.name)).random(len(candidates))
        for i in valid:
            scores[i], reasons[i] = float(draws[i]), "random"
        return rank(self.name, task, candidates, scores, reasons, "uniform among valid candidates", self.seed)


class Tournament(BaseSelector):
    """A pairwise tournament: the comparator judges pairs of candidates (each pair asked in both orders), and the
    candidate with the highest soft Borda count (the sum of its probabilities of being the better one; a pair not
    compared is a tie) wins, exact ties uniformly (docs/estimators.md, "tournament").

    With ``comparisons`` (``select.comparisons``) below the pairs there are, the pairs most likely to decide the winner
    go first (:func:`agentbon.metrics.tournament.next_pair`). Each candidate's recorded score is its group (0 here)
    plus half its count over the pool's other members, so the top score is the winner; every comparison is recorded
    with the selection, and the report decides each k-subset from the comparisons among its members."""

    name = "tournament"
    estimator = "tournament"
    uses_comparator = True
    reads_tests = False

    def _groups(self, candidates: Sequence[Candidate], valid: list[int]) -> dict[int, tuple[int, str]]:
        """Each valid candidate's group and its label: the tournament runs inside a group, the highest one wins."""
        return {i: (0, "") for i in valid}

    def _select(self, task: Task, candidates: Sequence[Candidate], allowed: set[int]) -> Selection:
        valid, scores, reasons = self._split(candidates, allowed)
        groups = self._groups(candidates, valid)
        recorded = self._compare(task, candidates, {i: float(g) for i, (g, _) in groups.items()})
        seen = {pair: units(c.p_first) for pair, c in recorded.items()}
        q = np.full((len(candidates), len(candidates)), -1, np.int64)
        for (a, b), p in seen.items():
            q[a, b], q[b, a] = p, UNIT - p
        pools: dict[int, list[int]] = {}
        for i in valid:
            pools.setdefault(groups[i][0], []).append(i)
        for group, pool in pools.items():
            counts = soft_borda(q, pool)
            for i in pool:
                played = sum(1 for j in pool if j != i and q[i, j] >= 0)
                scores[i] = group + CRITIC_WEIGHT * counts[i] / (UNIT * max(len(pool) - 1, 1))
                reasons[i] = (
                    groups[i][1]
                    + "; " * bool(groups[i][1])
                    + (f"won {counts[i] / UNIT:.3f} of {len(pool) - 1} against its pool ({played} compared)")
                )
        top = max(pools, default=None)
        why = "no valid candidate" if top is None else self._why(len(pools[top]), len(recorded), groups[pools[top][0]])
        selection = rank(self.name, task, candidates, scores, reasons, why, self.seed)
        comparisons = [recorded[pair] for pair in sorted(recorded)]
        return selection.model_copy(update={"comparisons": comparisons})

    def _why(self, pool: int, compared: int, group: tuple[int, str]) -> str:
        return f"highest soft Borda count among {pool} candidates ({compared} pairs compared)"

    def _compare(
        self, task: Task, candidates: Sequence[Candidate], groups: dict[int, float]
    ) -> dict[tuple[int, int], Comparison]:
        """The comparisons the budget allows, positions (a, b) with a < b; ``p_first`` is about ``a``."""
        out: dict[tuple[int, int], Comparison] = {}
        if self.comparator is None:
            raise ValueError(f"selector {self.name!r} needs a comparator (select.comparator)")
        seen: dict[tuple[int, int], float] = {}
        while self.comparisons is None or len(out) < self.comparisons:
            pair = next_pair(groups, seen, set(out))
            if pair is None:
                break
            a, b = pair
            got = self.comparator.compare(task, candidates[a], candidates[b])
            if got.first != candidates[a].rollout.rollout_id:  # the comparator's record names the pair its own way
                got = got.model_copy(update={"first": got.second, "second": got.first, "p_first": 1.0 - got.p_first})
            out[pair] = got.model_copy(update={"p_first": units(got.p_first) / UNIT})
            seen[pair] = out[pair].p_first
        return out


class TestsThenTournament(Tournament):
    """Evidence tier first; the tournament decides among the candidates of a tier that holds more than one (the
    candidates the tests cannot separate), beside ``tests-then-critic``."""

    __test__ = False
    name = "tests-then-tournament"
    reads_tests = True

    def _groups(self, candidates: Sequence[Candidate], valid: list[int]) -> dict[int, tuple[int, str]]:
        return {i: evidence_tier(candidates[i]) for i in valid}

    def _why(self, pool: int, compared: int, group: tuple[int, str]) -> str:
        if pool == 1:
            return f"the only candidate in the best evidence tier ({group[1]})"
        return f"{pool} candidates in the best evidence tier ({group[1]}); the tournament chose ({compared} pairs compared)"


class Oracle(BaseSelector):
    """The grading tests choose: an upper bound, reported as the oracle and never as a selector.

    Flags do not move it: it ranks by the grade alone, so that it stays the upper bound coverage@k measures
    (a forged session already fails its grade; a tampered candidate's grade ran with the tampering undone).
    Its ranked reasons name the flags, and the report counts flagged oracle winners apart (docs/security.md).
    """

    name = "oracle"
    oracle = True

    def _select(self, task: Task, candidates: Sequence[Candidate], allowed: set[int]) -> Selection:
        valid, scores, reasons = self._split(candidates, allowed)
        for i in valid:
            grade = candidates[i].grade
            scores[i] = 1.0 if grade is not None and grade.status == "pass" else 0.0
            kinds = sorted({k for v in (grade, candidates[i].evidence) if v is not None for k in v.flag_kinds})
            reasons[i] = f"grade {grade.status if grade else 'missing'}" + (
                f"; flags: {', '.join(kinds)}" * bool(kinds)
            )
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


SELECTORS: dict[str, type[BaseSelector]] = {
    cls.name: cls
    for cls in (
        TestsThenCritic, CriticThenTests, TestsOnly, CriticOnly, Majority, SoftBestOfN, RandomChoice, Tournament,
        TestsThenTournament, Oracle,
    )
}  # fmt: skip
"""Every selector by name; its traits are class attributes (``estimator``, ``uses_critic``, ``reads_tests``,
``uses_comparator``)."""
