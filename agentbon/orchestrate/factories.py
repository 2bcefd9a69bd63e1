"""The one factory seam: how the orchestrator gets each component.

The defaults import the real modules lazily (a worker only imports what it runs). Tests pass a
``Factories`` built from the fakes in ``agentbon.testing``. Every field must be picklable by reference
(a module-level function or class), because the factories travel to Ray workers with each unit of work.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentbon.config import AgentConfig, ModelConfig, RunConfig, SandboxConfig
from agentbon.models.service import ModelService

if TYPE_CHECKING:
    from agentbon.protocols import Agent, Model, SandboxBackend, Selector, Verifier
    from agentbon.report.schema import RunReport
    from agentbon.store import RunStore


def default_backend(config: SandboxConfig) -> SandboxBackend:
    """The configured sandbox backend (docker, or process with weaker isolation)."""
    from agentbon.sandbox import make_backend

    return make_backend(config)


def default_agent(config: AgentConfig) -> Agent:
    """The configured agent (``bash`` or ``edit``)."""
    from agentbon.agent import make_agent

    return make_agent(config)


def default_model(config: ModelConfig) -> Model:
    """A client for the endpoint the driver made sure of (see ``ModelService``)."""
    from agentbon.models import make_model

    return make_model(config)


def default_verifier(config: RunConfig) -> Verifier:
    """The test verifier: fresh sandboxes labelled with the run (the driver dedupes patches)."""
    from agentbon.verify import TestVerifier

    labels = {"run": config.run_id or "", "stage": "verify"}
    backend = default_backend(config.sandbox)
    if config.run_id and hasattr(backend, "keep_warm"):  # reaped with the run: verification sandboxes may wait warm
        backend.keep_warm()
    return TestVerifier(backend, config.verify, labels=labels, output_limit=config.sandbox.output_limit)


class ServedLater:
    """The judge's model before the run's model service has started the server it owns (no endpoint given): what
    the preflight builds the selectors with. The driver builds them again with the served endpoint (or engine pool)
    once the service has started, so a call here is a bug, named as one."""

    def __init__(self, config: ModelConfig):
        self.name = config.name

    def chat(self, messages: Any, *, seed: int | None = None, **sampling: Any) -> Any:
        raise RuntimeError(f"the judge's model {self.name!r} was called before the run's model server started")


def default_selector(name: str, config: RunConfig, store: RunStore | None = None) -> Selector:
    """A selector by name (``tests-then-critic``, ``oracle``, ...); a judge that asks a model (the LLM judge, the
    scale judge, a tournament's pairwise judge: ``inert.judges``) talks to the run's endpoint, or, before the server
    the run starts itself is up (the preflight), to a :class:`ServedLater` stand-in."""
    from agentbon.inert import judges
    from agentbon.select import make_selector

    model: Any = None
    if judges(config):
        served = config.model.urls() or config.model.pool
        model = default_model(config.model) if served else ServedLater(config.model)
    return make_selector(name, config.select, model=model, store=store, seed=config.model.seed)


def default_report(store: RunStore) -> RunReport | None:
    """Write ``summary.json``, ``report.md`` and ``report.html``; return the summary (None without a report module)."""
    try:
        from agentbon.report import build_report, write_reports
    except ImportError:
        return None
    report = build_report(store)
    write_reports(store, report)
    return report


@dataclass(frozen=True)
class Factories:
    """Constructors of every component the orchestrator uses; the defaults are the real ones."""

    backend: Callable[[SandboxConfig], Any] = default_backend
    agent: Callable[[AgentConfig], Any] = default_agent
    model: Callable[[ModelConfig], Any] = default_model
    verifier: Callable[[RunConfig], Any] = default_verifier
    selector: Callable[..., Any] = default_selector
    """``selector(name, config, store)``."""
    server: Callable[[ModelConfig], Any] = ModelService
    """Driver side: a ``ModelService``-like object that makes sure of one endpoint (workers never start servers)."""
    report: Callable[[RunStore], RunReport | None] = default_report
    """Writes the reports at the end of a run and returns the summary to print."""
