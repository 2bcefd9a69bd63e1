"""The factories ``agentbon eval`` runs with: no model server (predictions come made); no best-of-N report but for an
ensemble of systems."""

from __future__ import annotations

from typing import Any

from agentbon.config import ModelConfig


class NoModelService:
    """A ``Factories.server`` that starts nothing: grading predictions needs no model, endpoint or model extras."""

    def __init__(self, config: ModelConfig):
        self.config = config

    def launch(self, *, ray_address: str | None = None) -> None:
        """Nothing to launch before Ray."""

    def pids(self) -> set[int]:
        return set()

    def start(self) -> ModelConfig:
        return self.config

    def restart(self) -> None:
        """Nothing to restart (no rollout asks for a model in an eval run)."""

    def stop(self) -> None:
        """Nothing to stop."""


def no_summary(store: Any) -> None:
    """A ``Factories.report``: an eval run's report is ``eval_report.json`` (``agentbon report`` can still be run)."""
    return None


def eval_factories(base: Any = None, *, report: bool = False) -> Any:
    """``base`` (default: the real factories) with no model server, and no best-of-N report unless ``report`` (an
    ensemble of systems is a best-of-N run: its report is ``base``'s)."""
    import dataclasses

    from agentbon.orchestrate import Factories

    base = base or Factories()
    return dataclasses.replace(base, server=NoModelService, report=base.report if report else no_summary)
