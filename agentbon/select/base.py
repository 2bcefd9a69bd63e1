"""What every selector shares: which candidates are invalid, the evidence tier, seeded ranking into a Selection."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Collection, Sequence
from typing import Literal

import numpy as np

from agentbon.protocols import Candidate, Critic
from agentbon.types import Ranked, Selection, Task, normalise_patch

INVALID_SCORE = -math.inf
"""Score of a candidate that cannot be chosen (empty patch, infra error, patch that does not apply, a blocking flag):
below every real score, whatever the selector's scale (soft-bon's draws are unbounded below); JSON null on disk."""
Estimator = Literal["rank", "uniform", "softmax", "majority", "tournament"]
"""How the report turns a selector's choice into selected@k, exactly that selector run on each k-subset
(docs/estimators.md, section 4): ``rank``, the top recorded score wins, ties uniformly (the scores do not depend on
the other candidates); ``uniform``, a uniform choice among the candidates; ``softmax``, the recorded scores are the
logits of a softmax draw; ``majority``, the largest cluster of identical patches within the subset wins (its
recorded cluster sizes count the whole task, so the report votes again in each subset); ``tournament``, the
recorded pairwise comparisons among the subset's members decide within the highest group present (the integer part
of the recorded score; :mod:`agentbon.metrics.tournament`)."""
FLAGGED = "flagged: "
"""Head of the ranked reason of a candidate that a flag keeps from being chosen (``flagged: forged, tampered``)."""
TIERS = {"fail": 0, "undecided": 1, "pass": 2}
"""Evidence tiers; an evidence verdict that is missing or an infra error counts as undecided."""


def invalid_reason(candidate: Candidate) -> str | None:
    """Why a candidate ranks last whatever the selector (None when it is a real candidate)."""
    rollout, evidence = candidate.rollout, candidate.evidence
    if rollout.status == "infra_error":
        return "rollout infra_error"
    if not normalise_patch(rollout.patch).strip():
        return "empty patch"
    if evidence is not None and not evidence.patch_applied:
        return "patch does not apply"
    return None


def blocking_flags(candidate: Candidate, allowed: Collection[str] = ()) -> list[str]:
    """The flag kinds of the candidate's *evidence* verdict that keep it from being chosen (not in ``allowed``).

    Only the evidence verdict counts: a deployed system sees it, while the grade stays hidden from every selector
    but the oracle (where evidence is the grade, the evidence verdict is the grade's copy and carries its flags).
    """
    evidence = candidate.evidence
    return [k for k in evidence.flag_kinds if k not in allowed] if evidence is not None else []


def evidence_tier(candidate: Candidate) -> tuple[int, str]:
    """The candidate's evidence tier and its label (pass > undecided > fail)."""
    evidence = candidate.evidence
    status = evidence.status if evidence is not None and evidence.status != "infra_error" else "undecided"
    return TIERS[status], f"evidence {status}"


def stable_seed(*parts: object) -> int:
    """A seed from the parts that is the same in every process (``hash()`` of a str is not)."""
    return int(hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:16], 16)


def critic_scores(
    critic: Critic | None, task: Task, candidates: Sequence[Candidate], which: Sequence[int]
) -> dict[int, float]:
    """Critic scores of the candidates at the given positions (a precomputed ``critic_score`` is used as is)."""
    out: dict[int, float] = {}
    for i in which:
        c = candidates[i]
        if c.critic_score is not None:
            out[i] = float(c.critic_score)
        elif critic is not None:
            out[i] = float(critic.score(task, c.rollout, c.evidence))
    return out


def rank(
    name: str,
    task: Task,
    candidates: Sequence[Candidate],
    scores: Sequence[float],
    reasons: Sequence[str],
    why: str,
    seed: int,
    oracle: bool = False,
) -> Selection:
    """A Selection with candidates sorted by score; ties are put in a seeded random order (the winner among equals)."""
    run_id = candidates[0].rollout.run_id if candidates else ""
    if not candidates:
        return Selection(
            run_id=run_id, task_id=task.task_id, selector=name, winner=None, reason="no candidates", oracle=oracle
        )
    tiebreak = np.random.default_rng(stable_seed(seed, task.task_id, name)).permutation(len(candidates))
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], tiebreak[i]))
    ranked = [
        Ranked(rollout_id=candidates[i].rollout.rollout_id, score=float(scores[i]), reason=reasons[i]) for i in order
    ]
    top = order[0]
    if scores[top] <= INVALID_SCORE:  # the selectors name the flags where flags kept every candidate out
        why = "no valid candidate (empty patches or infra errors)"
        return Selection(
            run_id=run_id, task_id=task.task_id, selector=name, winner=None, ranked=ranked, reason=why, oracle=oracle
        )
    return Selection(
        run_id=run_id,
        task_id=task.task_id,
        selector=name,
        winner=ranked[0].rollout_id,
        ranked=ranked,
        reason=why,
        oracle=oracle,
    )
