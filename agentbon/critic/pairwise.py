"""Pairwise comparators: which of two candidates is the better one (the tournament selectors' judge).

- ``PairwiseJudge``: the model sees the problem, both candidates' diffs and their evidence results, and answers A or
  B; p(A) is read from the top logprobs of the answer (a parsed answer where the server gives none). It is asked in
  both orders and the two answers are averaged, which cancels a preference for the first (or second) position.
  The template is ``verifiers/critic/compare.md``.
- ``CriticComparator``: a pointwise critic read pairwise (the higher score is the better one, equal scores a tie):
  what a tournament uses where no model judges, and a comparator whose preferences a test knows.

Both cache each pair's comparison, so a selector that runs again on some of the candidates (the flagged fallback, a
subset) never asks twice.
"""

from __future__ import annotations

from typing import Protocol

from agentbon.critic.judge import cut_patch, default_template, evidence_text, fill, p_choice
from agentbon.metrics.tournament import UNIT, units
from agentbon.protocols import Candidate, Critic, Model
from agentbon.types import Comparison, Task

A, B = ("A",), ("B",)


class Comparator(Protocol):
    """Compares two candidates of a task: the probability that the first is the better one, and what it cost."""

    name: str

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Comparison: ...


def _ordered(first: Candidate, second: Candidate) -> tuple[Candidate, Candidate, bool]:
    """The pair with the lower rollout index first (a comparison is recorded once per pair), and whether swapped."""
    swap = (first.rollout.index, first.rollout.rollout_id) > (second.rollout.index, second.rollout.rollout_id)
    return (second, first, True) if swap else (first, second, False)


def flipped(c: Comparison) -> float:
    """``c``'s probability that its ``second`` is the better one."""
    return (UNIT - units(c.p_first)) / UNIT


class PairwiseJudge:
    """A model asked which of two patches resolves the issue, in both orders (protocols: a ``Comparator``)."""

    name = "pairwise-judge"

    def __init__(self, model: Model, template: str | None = None, max_patch_chars: int = 4000):
        self.model = model
        self.template = template or default_template("compare")
        self.max_patch_chars = max_patch_chars
        self.cache: dict[tuple[str, str], Comparison] = {}
        self.sources: dict[str, int] = {}
        """How many answers came from logprobs, a parsed answer, or neither."""

    def prompt(self, task: Task, a: Candidate, b: Candidate) -> str:
        return fill(
            self.template,
            {
                "problem": task.problem_statement[:6000],
                "patch_a": cut_patch(a.rollout.patch, self.max_patch_chars),
                "patch_b": cut_patch(b.rollout.patch, self.max_patch_chars),
                "evidence_a": evidence_text(a.evidence),
                "evidence_b": evidence_text(b.evidence),
            },
        )

    def _ask(self, task: Task, a: Candidate, b: Candidate) -> tuple[float, str, int]:
        messages = [{"role": "user", "content": self.prompt(task, a, b)}]
        response = self.model.chat(messages, seed=0, temperature=0.0, max_tokens=3, logprobs=True, top_logprobs=5)
        p, source = p_choice(response, A, B)
        self.sources[source] = self.sources.get(source, 0) + 1
        return p, source, response.usage.prompt_tokens + response.usage.completion_tokens

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Comparison:
        a, b, swapped = _ordered(first, second)
        key = (a.rollout.rollout_id, b.rollout.rollout_id)
        if key not in self.cache:
            p_ab, s_ab, t_ab = self._ask(task, a, b)  # a shown as A
            p_ba, s_ba, t_ba = self._ask(task, b, a)  # b shown as A: a is better with 1 - p(A)
            self.cache[key] = Comparison(
                first=key[0], second=key[1], p_first=units((p_ab + 1.0 - p_ba) / 2) / UNIT,
                p_asked_first=round(p_ab, 6), p_asked_second=round(1.0 - p_ba, 6), tokens=t_ab + t_ba,
                source=s_ab if s_ab == s_ba else f"{s_ab}/{s_ba}",
            )  # fmt: skip
        return _as_asked(self.cache[key], swapped)


class CriticComparator:
    """A pointwise critic read pairwise: the candidate with the higher score is the better one (p = 1), equal scores
    a tie (p = 1/2; every pair without a critic). No model is asked, so no token is spent."""

    name = "critic-pairs"

    def __init__(self, critic: Critic | None):
        self.critic = critic
        self.scores: dict[str, float] = {}
        self.cache: dict[tuple[str, str], Comparison] = {}

    def _score(self, task: Task, c: Candidate) -> float:
        rid = c.rollout.rollout_id
        if rid not in self.scores:
            given = c.critic_score
            if given is None:  # no critic: every pair a tie
                given = self.critic.score(task, c.rollout, c.evidence) if self.critic is not None else 0.0
            self.scores[rid] = float(given)
        return self.scores[rid]

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Comparison:
        a, b, swapped = _ordered(first, second)
        key = (a.rollout.rollout_id, b.rollout.rollout_id)
        if key not in self.cache:
            sa, sb = self._score(task, a), self._score(task, b)
            p = 1.0 if sa > sb else 0.0 if sa < sb else 0.5
            name = getattr(self.critic, "name", "critic") if self.critic is not None else "no critic"
            self.cache[key] = Comparison(first=key[0], second=key[1], p_first=p, source=name)
        return _as_asked(self.cache[key], swapped)


def _as_asked(c: Comparison, swapped: bool) -> Comparison:
    """The recorded comparison (lower index first) as the caller asked it: the caller reads ``p_first`` about the
    candidate it gave first."""
    if not swapped:
        return c
    return c.model_copy(
        update={"first": c.second, "second": c.first, "p_first": flipped(c),
                "p_asked_first": None if c.p_asked_second is None else round(1.0 - c.p_asked_second, 6),
                "p_asked_second": None if c.p_asked_first is None else round(1.0 - c.p_asked_first, 6)}
    )  # fmt: skip
