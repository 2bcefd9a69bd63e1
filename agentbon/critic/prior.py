"""The heuristic prior critic: a named fallback for when no trained critic exists (no training data yet)."""

from __future__ import annotations

from agentbon.diffs import files_touched
from agentbon.types import Rollout, Task, Verdict
from agentbon.verify.guard import why_protected


class HeuristicPrior:
    """Hand-set prior, not learned: evidence result first, then signs of a clean submission.

    Reported under its own name (``heuristic-prior``) so that no result is mistaken for a trained
    critic's. Train one with ``agentbon critic train RUN_DIR``.
    """

    name = "heuristic-prior"

    def score(self, task: Task, rollout: Rollout, evidence: Verdict | None) -> float:
        if not rollout.patch.strip():
            return 0.01
        status = evidence.status if evidence is not None else "undecided"
        score = {"pass": 0.7, "fail": 0.2}.get(status, 0.45)
        if rollout.status == "submitted":
            score += 0.1
        if rollout.malformed:
            score -= 0.05
        if any(why_protected(p, set()) for p in files_touched(rollout.patch)):
            score -= 0.05
        return min(max(score, 0.01), 0.99)
