"""Critic outcome reward models (protocols.Critic): scores in [0, 1] where tests cannot decide.

- ``ClassifierCritic``: logistic regression trained on the run store's own graded rollouts
  (``agentbon critic train``), optionally with text embeddings (the ``critic`` extra);
- ``LLMJudge``: a model asked YES/NO, p(YES) from logprobs;
- ``ScaleJudge``: a model's expected rating on a 1-9 scale from logprobs, over criteria and repeats;
- ``PairwiseJudge`` / ``CriticComparator``: comparators of two candidates for the tournament selectors;
- ``HeuristicPrior``: the explicitly named fallback when nothing is trained yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentbon.critic.classifier import ClassifierCritic, LogisticModel
from agentbon.critic.judge import LLMJudge
from agentbon.critic.pairwise import CriticComparator, PairwiseJudge
from agentbon.critic.prior import HeuristicPrior
from agentbon.critic.scale import ScaleJudge
from agentbon.errors import ConfigError
from agentbon.protocols import Critic


def make_critic(
    kind: str, path: str | Path | None = None, model: Any = None, store: Any = None, config: Any = None
) -> Critic:
    """The configured critic: ``auto`` (a classifier trained on the run directory's earlier runs where it beats the
    evidence out of fold, else the prior; critic/auto.py), ``classifier`` (``path``'s, else the prior), ``judge``
    and ``scale-judge`` (need ``model``; ``config``: the ``SelectConfig`` with the scale judge's settings), ``prior``."""
    if kind == "auto":
        if path:
            return ClassifierCritic(path)
        if store is None:
            return HeuristicPrior()
        from agentbon.critic.auto import choose

        return choose(Path(store.path).parent, Path(store.path).name)[0]
    if kind == "classifier":
        return ClassifierCritic(path) if path else HeuristicPrior()
    if kind == "prior":
        return HeuristicPrior()
    if kind == "judge":
        if model is None:
            raise ConfigError("select.critic=judge needs a model (pass model= to make_selector / make_critic)")
        trajectories = store.trajectory if store is not None else None
        return LLMJudge(model, trajectories=trajectories)
    if kind == "scale-judge":
        if model is None:
            raise ConfigError("select.critic=scale-judge needs a model (pass model= to make_selector / make_critic)")
        trajectories = store.trajectory if store is not None else None
        if config is None:
            return ScaleJudge(model, trajectories=trajectories)
        return ScaleJudge(
            model, criteria=config.scale_criteria, repeats=config.scale_repeats,
            temperature=config.scale_temperature, trajectories=trajectories,
        )  # fmt: skip
    raise ConfigError(f"unknown critic {kind!r} (auto, classifier, judge, scale-judge, prior)")


__all__ = [
    "ClassifierCritic", "CriticComparator", "HeuristicPrior", "LLMJudge", "LogisticModel", "PairwiseJudge",
    "ScaleJudge", "make_critic",
]  # fmt: skip
