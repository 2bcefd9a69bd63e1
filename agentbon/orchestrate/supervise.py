"""Supervision by the driver: start times from the tracker, hard deadlines, escalating cancels, Ctrl-C.

A unit's deadline counts from when it really started (the tracker says), not from submission: a unit
queued behind busy sandbox slots is not late. Past its deadline (plus a grace period for the in-worker
watchdog to act) the driver kills it with ``ray.cancel(force=True)``; a unit cancelled politely (early
stop) that is still running after the grace period is killed the same way.
"""

from __future__ import annotations

import time
from typing import Any

import ray

from agentbon.orchestrate.cluster import SANDBOX, reap_everywhere
from agentbon.orchestrate.events import Aborted, Interrupted, Tokens, UnitStarted, Warning
from agentbon.orchestrate.state import RunState, Unit

GRACE_S = 10.0
"""A unit past its deadline, or cancelled and still running, is killed this much later."""
SLOTS_CHECK_S = 15.0
"""How often the driver checks that the cluster still has sandbox slots (nodes may die or join)."""


class Supervisor:
    """Learns when units started, kills units past their deadline, and stops everything on Ctrl-C."""

    def __init__(self, state: RunState, tracker: Any):
        self.state, self.tracker = state, tracker
        self._slots_checked = 0.0

    def poll(self, also: Unit | None = None) -> None:
        """Take start reports and token counts from the tracker; enforce deadlines and cancels. ``also``: a unit just
        taken out of flight (it failed) whose start report may be waiting in the tracker: where it ran is then known
        for its infra event."""
        state = self.state
        try:
            started, tokens, completion = ray.get(self.tracker.drain.remote(), timeout=30)
        except Exception:  # the tracker restarts on its own; deadlines count from submission meanwhile
            started, tokens, completion = [], 0, 0
        by_key = {u.key: u for u in state.inflight.values()}
        if also is not None:
            by_key[also.key] = also
        for s in started:
            unit = by_key.get(s.unit)
            if unit is not None and unit.started_at is None:
                unit.started_at, unit.node_id = s.at, s.node_id
                state.record(UnitStarted(unit=unit.kind, rollout_id=unit.rollout_id))
        if tokens:
            state.record(Tokens(n=tokens, completion=completion))
        now = time.time()
        for ref, unit in state.inflight.items():
            if unit.kind == "prepare" or unit.forced:
                continue
            if unit.cancel is None and unit.started_at is not None and now - unit.started_at > unit.budget_s + GRACE_S:
                unit.cancel, unit.cancelled_at = "deadline", now
                self._kill(ref, unit)
            elif unit.cancel is not None and unit.cancelled_at is not None and now - unit.cancelled_at > GRACE_S:
                self._kill(ref, unit)
        self._check_slots(now)

    def _check_slots(self, now: float) -> None:
        """Warn (once per check) while no node offers a sandbox slot: work waits until a node joins."""
        if now - self._slots_checked < SLOTS_CHECK_S:
            return
        self._slots_checked = now
        if self.state.inflight and ray.cluster_resources().get(SANDBOX, 0) == 0:
            self.state.record(Warning(message=f"no node offers {SANDBOX!r} slots any more: waiting for one to join"))

    @staticmethod
    def _kill(ref: Any, unit: Unit) -> None:
        unit.forced = True
        ray.cancel(ref, force=True)

    def interrupt(self, reason: str | None = None) -> None:
        """Cancel every unit, record what was pending (and why the driver stopped, when it did), and remove the
        run's sandboxes on every node."""
        state = self.state
        for ref, unit in state.inflight.items():
            unit.cancel = "interrupt"
            ray.cancel(ref, force=True)
        pending = sorted({u.rollout_id for u in state.inflight.values() if u.rollout_id})
        state.inflight.clear()
        reap_everywhere(state.config, state.factories, {"run": state.run_id})
        state.record(Aborted(reason=reason, pending=pending) if reason else Interrupted(pending=pending))
