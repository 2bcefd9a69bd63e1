"""The background remover: every queued container is removed once, in order; gone-already and failures never stall it."""

from __future__ import annotations

import logging
import threading

import docker
import requests

from agentbon.sandbox.removal import Remover


class FakeAPI:
    """``remove_container`` that records its calls, can be held on an event, and fails as told per container."""

    def __init__(self, failures: dict[str, Exception] | None = None):
        self.removed: list[str] = []
        self.failures = failures or {}
        self.gate = threading.Event()
        self.gate.set()

    def remove_container(self, container: str, force: bool, v: bool) -> None:
        assert force and v
        self.gate.wait()
        if container in self.failures:
            raise self.failures[container]
        self.removed.append(container)


def test_queued_containers_are_removed_in_order_and_flush_waits_for_them():
    api = FakeAPI()
    api.gate.clear()
    remover = Remover(api)
    for cid in ("a", "b", "c"):
        remover.put(cid, f"sandbox-{cid}")
    assert remover.pending == 3
    assert not remover.flush(0.0)  # held: nothing done yet
    api.gate.set()
    assert remover.flush(30.0)
    assert api.removed == ["a", "b", "c"] and remover.pending == 0 and remover.removed == 3


def test_a_container_gone_already_or_failing_does_not_stall_the_queue(caplog):
    api = FakeAPI({
        "gone": docker.errors.NotFound("no such container"),
        "racing": docker.errors.APIError("removal of container racing is already in progress"),
        "broken": docker.errors.APIError("driver failed"),
        "offline": requests.ConnectionError("engine went away"),
    })
    remover = Remover(api)
    with caplog.at_level(logging.WARNING):
        for cid in ("gone", "racing", "broken", "offline", "ok"):
            remover.put(cid, f"sandbox-{cid}")
        assert remover.flush(30.0)
    assert api.removed == ["ok"]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2
    assert "sandbox-broken" in warned[0] and "sandbox-offline" in warned[1]
    assert all("agentbon cleanup" in w for w in warned)


def test_flush_with_nothing_queued_returns_at_once():
    assert Remover(FakeAPI()).flush(0.0)
