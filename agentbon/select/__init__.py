"""Selectors: rank a task's candidates and name a winner with the reason (protocols.Selector).

``make_selector(name, config, critic=..., model=..., store=...)`` builds one by name. Selectors that
use a critic take it as given, or build the configured one (``select.critic``: a trained classifier,
the LLM judge through ``model``, or, with no training data, the explicitly named heuristic prior).
"""

from __future__ import annotations

from typing import Any

from agentbon.config import SelectConfig
from agentbon.errors import ConfigError
from agentbon.protocols import Critic, Selector
from agentbon.select.base import FLAGGED, INVALID_SCORE, blocking_flags, invalid_reason
from agentbon.select.selectors import SELECTORS


def make_selector(
    name: str,
    config: SelectConfig | None = None,
    *,
    critic: Critic | None = None,
    model: Any = None,
    store: Any = None,
    seed: int = 0,
    comparator: Any = None,
) -> Selector:
    """A selector by name; critic-using ones get ``critic`` or the one ``config.critic`` names, the tournaments
    ``comparator`` or the one ``config.comparator`` names: the pairwise judge through ``model`` (``auto`` where a model
    is given), else the critic read pairwise (no critic: every pair a tie)."""
    config = config or SelectConfig()
    if name not in SELECTORS:
        raise ConfigError(f"unknown selector {name!r} (known: {', '.join(SELECTORS)})")
    cls = SELECTORS[name]
    pairwise = cls.uses_comparator and comparator is None and (config.comparator == "critic" or model is None)
    if (cls.uses_critic or pairwise) and critic is None and config.critic != "none":
        from agentbon.critic import make_critic

        critic = make_critic(config.critic, path=config.critic_path, model=model, store=store, config=config)
    if cls.uses_comparator and comparator is None:
        from agentbon.critic.pairwise import CriticComparator, PairwiseJudge

        if config.comparator == "judge" and model is None:
            raise ConfigError(f"selector {name} with select.comparator=judge needs a model (pass model=)")
        comparator = PairwiseJudge(model) if config.comparator != "critic" and model is not None else (
            CriticComparator(critic)
        )
    return cls(
        critic=critic,
        seed=seed,
        temperature=config.soft_temperature,
        allow_flags=config.allow_flags,
        flagged_fallback=config.flagged_fallback,
        comparator=comparator,
        comparisons=config.comparisons,
    )


__all__ = ["FLAGGED", "INVALID_SCORE", "SELECTORS", "blocking_flags", "invalid_reason", "make_selector"]
