"""Critic outcome reward models (protocols.Critic): scores in [0, 1] where tests cannot decide.

- ``ClassifierCritic``: logistic regression trained on the run store's own graded rollouts
  (``agentbon critic train``), optionally with text embeddings (the ``critic`` extra);
- ``LLMJudge``: a model asked YES/NO, p(YES) from logprobs;
- ``HeuristicPrior``: the explicitly named fallback when nothing is trained yet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentbon.critic.classifier import ClassifierCritic, LogisticModel
from agentbon.critic.judge import LLMJudge
from agentbon.critic.prior import HeuristicPrior
from agentbon.errors import ConfigError
from agentbon.protocols import Critic


def make_critic(kind: str, path: str | Path | None = None, model: Any = None, store: Any = None) -> Critic:
    """The configured critic: ``auto`` (a classifier trained on the run directory's earlier runs where it beats the
    evidence out of fold, else the prior; critic/auto.py), ``classifier`` (``path``'s, else the prior), ``judge``
    (needs ``model``), ``prior``."""
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
    raise ConfigError(f"unknown critic {kind!r} (auto, classifier, judge, prior)")


__all__ = ["ClassifierCritic", "HeuristicPrior", "LLMJudge", "LogisticModel", "make_critic"]
