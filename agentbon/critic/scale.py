"""The fine-grained pointwise judge: the expected score over a 1-9 scale, read from the answer's logprobs.

A YES/NO judge (critic/judge.py) reads one token's probability; candidates a model finds equally plausible then
tie or differ by noise. Here the model rates the patch on a scale of 1 to 9 and the score is the expectation of the
rating under the probabilities the server gives each digit among the top logprobs of the first answer token
(renormalised over the digits), mapped to [0, 1]: ``(E[r] − 1) / 8``. Optionally over named criteria (each its own
question) and repeated (``repeats`` answers at ``temperature``, seeds 0, 1, ...); the score is the mean over all of
them. Each candidate's probability of each scale point per criterion (the mean over repeats) is kept in
``distributions`` and recorded with the selection (``Ranked.scale``). An answer without logprobs counts as the digit
it gives (a point mass), an answer without a digit as the middle of the scale (noted in ``sources``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from agentbon.critic.judge import default_template, fill, slots
from agentbon.protocols import ChatResponse, Model
from agentbon.types import Rollout, Task, Verdict

POINTS = tuple(range(1, 10))
"""The scale's points: one digit each, a single token in every tokenizer we know."""
CRITERIA = ("the patch correctly resolves the issue without breaking existing behaviour",)


def scale_distribution(response: ChatResponse) -> tuple[list[float], str]:
    """The probability of each scale point (``POINTS``) from the first answer token whose top logprobs hold a digit
    of the scale; a point mass on a parsed digit without logprobs; uniform where neither."""
    for step in (response.logprobs or [])[:5]:
        mass = [0.0] * len(POINTS)
        for cand in step.get("top_logprobs") or [{"token": step.get("token"), "logprob": step.get("logprob")}]:
            token = str(cand.get("token") or "").strip().strip("*")
            if cand.get("logprob") is not None and token.isdigit() and int(token) in POINTS:
                mass[int(token) - POINTS[0]] += math.exp(cand["logprob"])
        total = sum(mass)
        if total > 0:
            return [m / total for m in mass], "logprobs"
    digit = re.search(r"[1-9]", response.content)
    if digit:
        return [float(int(digit.group()) == p) for p in POINTS], "parsed"
    return [1.0 / len(POINTS)] * len(POINTS), "unparsed"


def expected_score(distribution: Sequence[float]) -> float:
    """The distribution's expected rating mapped to [0, 1] (1 → 0, 9 → 1)."""
    mean = sum(p * point for p, point in zip(distribution, POINTS, strict=True))
    return (mean - POINTS[0]) / (POINTS[-1] - POINTS[0])


class ScaleJudge:
    """protocols.Critic: the expected rating on a 1-9 scale from the logprobs, over criteria and repeats."""

    name = "scale-judge"

    def __init__(
        self,
        model: Model,
        criteria: Sequence[str] = CRITERIA,
        repeats: int = 1,
        temperature: float = 0.0,
        template: str | None = None,
        trajectories: Callable[[str], list[dict[str, Any]]] | None = None,
        max_patch_chars: int = 6000,
    ):
        self.model, self.repeats, self.temperature = model, repeats, temperature
        self.criteria = list(criteria) or list(CRITERIA)
        self.template = template or default_template("scale")
        self.trajectories = trajectories
        self.max_patch_chars = max_patch_chars
        self.sources: dict[str, int] = {}
        self.tokens: dict[str, int] = {}
        """Rollout id → tokens its latest scoring spent (every criterion and repeat)."""
        self.distributions: dict[str, dict[str, list[float]]] = {}
        """Rollout id → criterion → the probability of each scale point (mean over repeats)."""

    def prompt(self, task: Task, rollout: Rollout, evidence: Verdict | None, criterion: str) -> str:
        shown = slots(task, rollout, evidence, self.trajectories, self.max_patch_chars)
        return fill(self.template, {**shown, "criterion": criterion})

    def score(self, task: Task, rollout: Rollout, evidence: Verdict | None) -> float:
        if not rollout.patch.strip():
            return 0.0
        spent = 0
        per: dict[str, list[float]] = {}
        for criterion in self.criteria:
            messages = [{"role": "user", "content": self.prompt(task, rollout, evidence, criterion)}]
            summed = [0.0] * len(POINTS)
            for seed in range(self.repeats):
                response = self.model.chat(
                    messages, seed=seed, temperature=self.temperature, max_tokens=3, logprobs=True, top_logprobs=20
                )
                dist, source = scale_distribution(response)
                self.sources[source] = self.sources.get(source, 0) + 1
                spent += response.usage.prompt_tokens + response.usage.completion_tokens
                summed = [s + p / self.repeats for s, p in zip(summed, dist, strict=True)]
            per[criterion] = [round(p, 6) for p in summed]
        self.tokens[rollout.rollout_id] = spent
        self.distributions[rollout.rollout_id] = per
        return sum(expected_score(d) for d in per.values()) / len(per)
