"""Verify identical patches once per (task, test set) and share the verdict (the orchestrator holds the cache)."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable

from agentbon.types import Role, Task, TestSet, Verdict, patch_hash

CacheKey = tuple[str, str, str]


def tests_fingerprint(tests: TestSet) -> str:
    """Content hash of a test set: evidence and grade share verdicts when they are the same set (migrations)."""
    return hashlib.sha256(tests.model_dump_json().encode()).hexdigest()[:16]


class VerdictCache:
    """Thread-safe map from ``(task_id, test set, patch hash)`` to the verdict of the first candidate verified.

    Concurrent requests for one key wait for the first instead of verifying twice. Infrastructure
    errors are never cached (the next identical candidate tries again).
    """

    def __init__(self) -> None:
        self._done: dict[CacheKey, Verdict] = {}
        self._inflight: dict[CacheKey, threading.Event] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(task: Task, role: Role, patch: str) -> CacheKey:
        """The cache key of a candidate patch in a role."""
        tests = task.evidence_tests if role == "evidence" else task.grade
        return (task.task_id, tests_fingerprint(tests), patch_hash(patch))

    def get(self, key: CacheKey) -> Verdict | None:
        with self._lock:
            return self._done.get(key)

    def put(self, key: CacheKey, verdict: Verdict) -> None:
        """Remember a verdict (also for seeding from a resumed run's store); infra errors are ignored."""
        if verdict.status != "infra_error":
            with self._lock:
                self._done.setdefault(key, verdict)

    def run(self, key: CacheKey, compute: Callable[[], Verdict]) -> tuple[Verdict, bool]:
        """The cached verdict for ``key`` (shared=True) or the one ``compute`` makes (shared=False)."""
        while True:
            with self._lock:
                if key in self._done:
                    self.hits += 1
                    return self._done[key], True
                event = self._inflight.get(key)
                if event is None:
                    self._inflight[key] = threading.Event()
                    self.misses += 1
                    break
            event.wait()
        try:
            verdict = compute()
            self.put(key, verdict)
            return verdict, False
        finally:
            with self._lock:
                self._inflight.pop(key).set()

    def __len__(self) -> int:
        return len(self._done)
