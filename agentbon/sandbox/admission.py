"""Admission control: how many sandboxes may start at once on a node, following the engine's health.

Every process on a node that starts containers for agentbon takes one of ``limit`` start slots (file locks in the
node's lock directory, so Ray's worker processes share them) and reports how long the start took and whether it
failed. The limit grows by one while starts are quick and halves when one is slow (several times the fastest start
seen) or fails, so a node with many slots slows its starts down instead of pushing the engine into timeouts
(docs/sandboxes.md, "Admission control"). Pure policy in ``next_limit``; the coordination in ``Admission``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from agentbon.files import write_atomic

SLOW_FACTOR = 4.0
"""A start this many times the fastest one seen (and at least ``SLOW_MIN_S`` over it) counts as slow."""
SLOW_MIN_S = 1.0
BASELINE_DRIFT = 1.02
"""The fastest start seen creeps up by this factor per start, so one lucky start does not make all others slow."""


@dataclass(frozen=True)
class Health:
    """The node's admission state: the current limit and the fastest recent start."""

    limit: int
    fastest_s: float


def next_limit(health: Health, seconds: float, failed: bool, ceiling: int) -> Health:
    """The state after one start took ``seconds`` (``failed``: the engine refused it or timed out)."""
    fastest = min(seconds, health.fastest_s * BASELINE_DRIFT) if seconds > 0 else health.fastest_s
    slow = seconds > max(SLOW_FACTOR * fastest, fastest + SLOW_MIN_S)
    if failed or slow:
        return Health(max(1, health.limit // 2), fastest)
    return Health(min(ceiling, health.limit + 1), fastest)


@dataclass
class Ticket:
    """One admitted start: how long it waited and the limit it was admitted under."""

    waited_s: float
    limit: int


class Admission:
    """Start slots shared by the processes of one node (``ceiling`` at most; ``initial`` to begin with)."""

    def __init__(self, ceiling: int, initial: int | None = None, directory: Path | None = None, name: str = "engine"):
        self.ceiling = max(1, ceiling)
        self.initial = max(1, min(initial or self.ceiling, self.ceiling))
        self.dir = directory or Path(tempfile.gettempdir()) / "agentbon-locks" / f"admission-{name}"
        self.dir.mkdir(parents=True, exist_ok=True)
        self._state = self.dir / "state.json"

    @contextlib.contextmanager
    def _locked_state(self) -> Iterator[list[Health]]:
        with open(self.dir / "state.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                box = [self._read()]
                before = box[0]
                yield box
                if box[0] != before:
                    write_atomic(self._state, json.dumps({"limit": box[0].limit, "fastest_s": box[0].fastest_s}))
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def _read(self) -> Health:
        try:
            data = json.loads(self._state.read_text())
            return Health(max(1, min(int(data["limit"]), self.ceiling)), float(data["fastest_s"]))
        except (OSError, ValueError, KeyError, TypeError):
            return Health(self.initial, float("inf"))

    def health(self) -> Health:
        with self._locked_state() as box:
            return box[0]

    @contextlib.contextmanager
    def start(self) -> Iterator[Ticket]:
        """Hold a start slot while the body starts a container; a raised exception counts as a failed start."""
        waited = time.monotonic()
        pause = 0.02
        while True:
            limit = self.health().limit
            handle = self._try_slots(limit)
            if handle is not None:
                break
            time.sleep(pause)  # other processes hold every slot: look again soon
            pause = min(pause * 1.5, 0.25)
        ticket = Ticket(waited_s=time.monotonic() - waited, limit=limit)
        started, failed = time.monotonic(), True
        try:
            yield ticket
            failed = False
        finally:
            seconds = time.monotonic() - started
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
            with self._locked_state() as box:
                box[0] = next_limit(box[0], seconds, failed, self.ceiling)

    def _try_slots(self, limit: int) -> TextIO | None:
        for slot in range(limit):
            handle = open(self.dir / f"slot-{slot}.lock", "w")  # held until the start ends
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return handle
            except BlockingIOError:
                handle.close()
        return None
