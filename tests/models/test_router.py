"""Router logic: a stable home engine per task, load-aware fallback at the cap, waiting when all are full."""

from __future__ import annotations

import threading
import time

import pytest

from agentbon.errors import ServerFailure
from agentbon.models.router import Router


def test_home_is_stable_across_instances_and_spreads_tasks():
    a, b = Router(4, 8), Router(4, 8)
    tasks = [f"repo__issue-{i}" for i in range(200)]
    assert [a.home(t) for t in tasks] == [b.home(t) for t in tasks]
    counts = [sum(a.home(t) == e for t in tasks) for e in range(4)]
    assert min(counts) > 25, counts  # 200 tasks over 4 engines: no engine starved


def test_all_rollouts_of_a_task_go_home_while_it_has_room():
    r = Router(3, 8)
    home = r.home("t")
    assert [r.acquire("t") for _ in range(8)] == [home] * 8
    assert r.stats()["home"] == 8 and r.stats()["spills"] == 0


def test_full_home_spills_to_the_least_loaded_engine():
    r = Router(3, 2)
    home = r.home("t")
    others = [e for e in range(3) if e != home]
    r.load[others[0]] = 1  # one engine already has a request
    picks = [r.acquire("t") for _ in range(4)]
    # Home until full, then the least loaded (others[1] at 0), then a tie at 1 broken by the lower index.
    assert picks == [home, home, others[1], others[0]]
    assert r.stats()["spills"] == 2
    assert all(load <= 2 for load in r.load)


def test_release_goes_back_home():
    r = Router(2, 1)
    home = r.home("t")
    assert r.acquire("t") == home
    assert r.acquire("t") == 1 - home
    r.release(home)
    assert r.acquire("t") == home


def test_acquire_waits_while_every_engine_is_full_and_wakes_on_release():
    r = Router(2, 1)
    first = [r.acquire("a"), r.acquire("b")]
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(r.acquire("c", timeout_s=5)))
    waiter.start()
    time.sleep(0.2)
    assert got == []  # blocked: both engines at their cap
    r.release(first[1])
    waiter.join(60)
    assert got == [first[1]]


def test_acquire_times_out_as_a_server_failure():
    r = Router(1, 1)
    r.acquire("a")
    with pytest.raises(ServerFailure, match="no vLLM engine had a free slot within 0.2s"):
        r.acquire("b", timeout_s=0.2)


def test_dead_engines_are_skipped_and_all_dead_is_a_server_failure():
    r = Router(2, 4)
    home = r.home("t")
    r.mark_dead(home)
    assert r.acquire("t") == 1 - home
    r.mark_dead(1 - home)
    with pytest.raises(ServerFailure, match="all 2 vLLM engines are dead"):
        r.acquire("t")


def test_concurrent_acquire_never_exceeds_the_cap():
    r = Router(3, 2)
    peak = [0]
    lock = threading.Lock()

    def worker(task: str) -> None:
        for _ in range(20):
            e = r.acquire(task, timeout_s=10)
            with lock:
                peak[0] = max(peak[0], max(r.load))
            time.sleep(0.001)
            r.release(e)

    threads = [threading.Thread(target=worker, args=(f"t{i % 4}",)) for i in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak[0] <= 2 and r.load == [0, 0, 0]


def test_bad_sizes_are_rejected():
    with pytest.raises(ValueError, match="engines >= 1"):
        Router(0, 4)
