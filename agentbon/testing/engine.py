"""A slow container engine, for checking admission control: a wrapper that adds latency and errors to engine calls,
and the same engine model in virtual time. Never on the product path (docs/sandboxes.md, "Admission control").

The model: a container start takes ``base_s`` plus ``per_start_s`` for every other start in flight (the engine
serialises much of its work), and a start that would take longer than ``timeout_s`` fails, as a client timeout
does on a node whose engine is swamped (the 224-core node of the anchors timed out after minutes at high
concurrency).
"""

from __future__ import annotations

import heapq
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from agentbon.sandbox.admission import Health, next_limit

STARTS = ("create_container", "start")


@dataclass(frozen=True)
class EngineModel:
    base_s: float = 0.3
    per_start_s: float = 0.25
    timeout_s: float = 5.0

    def latency(self, in_flight: int) -> float:
        """Seconds one start takes with ``in_flight`` starts under way (itself included)."""
        return self.base_s + self.per_start_s * max(in_flight - 1, 0)


class SlowEngine:
    """An ``APIClient`` whose container creates sleep as ``model`` says for the starts in flight, and fail (a
    ``requests.Timeout``, as the real client raises) where the model's latency passes its timeout."""

    def __init__(self, api: Any, model: EngineModel):
        self._api, self.model = api, model
        self._lock = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.errors = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._api, name)
        if name != "create_container":
            return attr

        def slowed(*args: Any, **kwargs: Any) -> Any:
            import requests

            with self._lock:
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
                latency = self.model.latency(self.in_flight)
            try:
                if latency > self.model.timeout_s:
                    time.sleep(self.model.timeout_s)
                    with self._lock:
                        self.errors += 1
                    raise requests.Timeout(f"simulated engine: a start would take {latency:.1f}s")
                time.sleep(latency)
                return attr(*args, **kwargs)
            finally:
                with self._lock:
                    self.in_flight -= 1

        return slowed


@dataclass
class Simulated:
    """What a simulated batch of starts did."""

    started: int = 0
    failed: int = 0
    seconds: float = 0.0
    most_in_flight: int = 0
    limits: list[int] = field(default_factory=list)

    @property
    def per_s(self) -> float:
        return self.started / self.seconds if self.seconds else 0.0


def simulate(model: EngineModel, starts: int, clients: int, ceiling: int, adaptive: bool = True) -> Simulated:
    """``clients`` processes each start sandboxes back to back until ``starts`` have succeeded, in virtual time.

    ``adaptive``: under ``next_limit`` from an initial ``min(4, ceiling)``; else up to ``ceiling`` at once, always.
    A start's latency is fixed when it begins, from the starts in flight then (a deterministic simplification).
    """
    out = Simulated()
    health = Health(min(4, ceiling), float("inf")) if adaptive else Health(ceiling, float("inf"))
    now, waiting, running = 0.0, clients, 0
    events: list[tuple[float, int, float, bool]] = []  # (ends at, order, took, failed)
    order = 0
    while out.started < starts and out.started + out.failed < 20 * starts:  # a flooded engine may never recover
        while waiting and running < health.limit:
            waiting -= 1
            running += 1
            latency = model.latency(running)
            failed = latency > model.timeout_s
            took = model.timeout_s if failed else latency
            heapq.heappush(events, (now + took, order, took, failed))
            order += 1
            out.most_in_flight = max(out.most_in_flight, running)
        now, _, took, failed = heapq.heappop(events)
        running -= 1
        waiting += 1
        if failed:
            out.failed += 1
        else:
            out.started += 1
        if adaptive:
            health = next_limit(health, took, failed, ceiling)
        out.limits.append(health.limit)
    out.seconds = now
    return out
