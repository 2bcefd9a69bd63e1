"""Admission control: the rule (pure), the node-wide slots (threads), and a slow engine (virtual time)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from agentbon.sandbox.admission import Admission, Health, next_limit
from agentbon.testing.engine import EngineModel, SlowEngine, simulate


def test_quick_starts_raise_the_limit_to_the_ceiling_and_no_further():
    health = Health(2, float("inf"))
    for _ in range(10):
        health = next_limit(health, 0.3, False, ceiling=5)
    assert health == Health(5, pytest.approx(0.3, rel=0.3))


def test_a_failed_or_slow_start_halves_the_limit_but_never_below_one():
    assert next_limit(Health(8, 0.3), 0.3, True, ceiling=8).limit == 4
    assert next_limit(Health(8, 0.3), 3.0, False, ceiling=8).limit == 4  # ten times the fastest
    assert next_limit(Health(8, 0.3), 1.0, False, ceiling=8).limit == 8  # slower, within the margin
    assert next_limit(Health(1, 0.3), 9.0, True, ceiling=8).limit == 1


def test_the_fastest_start_seen_drifts_up_so_one_lucky_start_does_not_pin_it():
    health = Health(4, 0.01)
    health = next_limit(health, 3.0, False, ceiling=8)
    assert health.limit == 2  # 300 times the fastest start seen: slow
    for _ in range(400):
        health = next_limit(health, 3.0, False, ceiling=8)
    assert health.limit == 8 and health.fastest_s == pytest.approx(3.0)  # 3 s became the engine's normal


def test_starts_beyond_the_limit_wait_for_a_slot(tmp_path):
    admission = Admission(ceiling=2, initial=2, directory=tmp_path)
    lock, inside, most = threading.Lock(), [0], [0]

    def start(_: int) -> int:
        with admission.start() as ticket:
            with lock:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            with lock:
                inside[0] -= 1
            return ticket.limit

    with ThreadPoolExecutor(8) as pool:
        limits = list(pool.map(start, range(40)))
    assert most[0] <= 2 and all(1 <= limit <= 2 for limit in limits)


def test_processes_share_the_state_through_the_lock_directory(tmp_path):
    one, other = Admission(ceiling=8, initial=4, directory=tmp_path), Admission(ceiling=8, directory=tmp_path)
    with pytest.raises(RuntimeError), one.start():
        raise RuntimeError("the engine refused it")
    assert other.health().limit == 2  # the failure another process saw halved the node's limit


def test_simulated_slow_engine_without_admission_times_out_starts():
    flood = simulate(EngineModel(), starts=300, clients=64, ceiling=64, adaptive=False)
    assert flood.failed > 0 and flood.most_in_flight == 64


def test_simulated_slow_engine_with_admission_slows_down_instead_of_failing():
    model = EngineModel()
    adaptive = simulate(model, starts=300, clients=64, ceiling=64)
    assert adaptive.failed == 0
    assert adaptive.most_in_flight < model.timeout_s / model.per_start_s  # never near the engine's breaking point
    ceiling = 1 / model.per_start_s  # starts/s the model's engine can give at all
    assert adaptive.per_s > 0.8 * ceiling


class Engine:
    """An engine API that answers at once; ``SlowEngine`` adds the model's latency and failures in front of it."""

    def create_container(self, *args, **kwargs):
        return {"Id": "x"}


def test_the_slow_engine_wrapper_fails_starts_past_its_breaking_point():
    import requests

    slow = SlowEngine(Engine(), EngineModel(base_s=0.001, per_start_s=0.0, timeout_s=1.0))
    assert slow.create_container("image") == {"Id": "x"}
    slow.model = EngineModel(base_s=2.0, per_start_s=0.0, timeout_s=0.001)
    with pytest.raises(requests.Timeout):
        slow.create_container("image")
    assert slow.errors == 1 and slow.in_flight == 0 and slow.most_in_flight == 1


def test_through_admission_the_slow_engine_never_sees_more_starts_than_it_can_take(tmp_path):
    # Three starts at once would pass the engine's timeout; admission with two slots keeps it below, whatever the
    # threads' timing (the sleeps are the simulated engine's latency, not waits of the test).
    slow = SlowEngine(Engine(), EngineModel(base_s=0.01, per_start_s=0.02, timeout_s=0.04))
    admission = Admission(ceiling=2, initial=2, directory=tmp_path)

    def start(_: int) -> None:
        with admission.start():
            slow.create_container("image")

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(start, range(24)))
    assert slow.errors == 0 and slow.most_in_flight <= 2
