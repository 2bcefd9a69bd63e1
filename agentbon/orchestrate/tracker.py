"""A small actor that workers report to: when a unit started (and where), and tokens as they are spent.

The driver drains it once per loop tick. It gives the driver what Ray does not: the moment a queued
unit actually started (the hard deadline counts from there), the node it runs on (to reap its
containers there), and live token counts for tokens/s.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy


@dataclass(frozen=True)
class Started:
    """A unit of work began running."""

    unit: str
    """``rollout:<rollout_id>:<attempt>`` or ``verify:<rollout_id>:<attempt>``."""
    node_id: str
    at: float


class Tracker:
    """Collects reports from workers until the driver drains them."""

    def __init__(self) -> None:
        self._started: list[Started] = []
        self._tokens = self._completion = 0

    def started(self, unit: str, node_id: str, at: float) -> None:
        self._started.append(Started(unit, node_id, at))

    def tokens(self, n: int, completion: int = 0) -> None:
        self._tokens += n
        self._completion += completion

    def drain(self) -> tuple[list[Started], int, int]:
        """Everything reported since the last drain: the units started, the tokens in all, the completion tokens."""
        out, tokens, completion = self._started, self._tokens, self._completion
        self._started, self._tokens, self._completion = [], 0, 0
        return out, tokens, completion


def start_tracker() -> Any:
    """Start the tracker actor on the driver's node (it must outlive any worker node)."""
    here = ray.get_runtime_context().get_node_id()
    actor = ray.remote(num_cpus=0, max_restarts=-1)(Tracker)
    return actor.options(scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False)).remote()


def report_start(tracker: Any, unit: str) -> None:
    """Tell the tracker (fire and forget) that this unit started here, now."""
    if tracker is not None:
        tracker.started.remote(unit, ray.get_runtime_context().get_node_id(), time.time())
