"""Renicing a local Ray's processes where agentbon also runs the model server (``run.ray_niceness``)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentbon.config import RunConfig
from agentbon.orchestrate.cluster import descendants, lower_priority, shares_cpu_with_server, started_since

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")

# A child that starts a thread, then a grandchild, and sleeps (like the raylet and the workers it forks).
PARENT = """
import subprocess, sys, threading, time
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print("ready", flush=True)
time.sleep(60)
"""


def _niceness(tid_dir: Path) -> int:
    return int((tid_dir / "stat").read_text().rsplit(")", 1)[1].split()[16])


def _thread_nices(pid: int) -> list[int]:
    return [_niceness(t) for t in Path(f"/proc/{pid}/task").iterdir()]


@pytest.fixture
def family() -> Iterator[tuple[int, int]]:
    """(a child with two threads and a grandchild, a child started before it) of this process."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    ray_like = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        assert ray_like.stdout is not None and ray_like.stdout.readline().strip() == "ready"
        yield ray_like.pid, other.pid
    finally:
        for proc in (ray_like, other):
            proc.kill()
            proc.wait()


def _grandchild(pid: int) -> int:
    for _ in range(50):
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    return int(stat.parent.name)
            except (OSError, ValueError):
                pass
        time.sleep(0.1)
    raise AssertionError("no grandchild")


def test_descendants_are_children_and_theirs(family: tuple[int, int]) -> None:
    ray_like, other = family
    found = descendants(os.getpid())
    assert {ray_like, _grandchild(ray_like), other} <= found and os.getpid() not in found
    assert descendants(ray_like) == {_grandchild(ray_like)}
    assert descendants(2**22 + 12345) == set()


def _above(base: int, step: int) -> int:
    """A niceness ``step`` above the test process's own (the suite may itself run under ``nice``)."""
    if base + step > 19:
        pytest.skip(f"the test process runs at niceness {base}: no room above it")
    return base + step


def test_every_thread_is_reniced_and_a_nicer_one_is_left(family: tuple[int, int]) -> None:
    ray_like, other = family
    base = os.nice(0)
    high, higher = _above(base, 2), _above(base, 4)
    assert len(_thread_nices(ray_like)) >= 2 and set(_thread_nices(ray_like)) == {base}
    assert lower_priority([ray_like], higher) >= 2
    assert set(_thread_nices(ray_like)) == {higher}
    assert lower_priority([ray_like], high) == 0  # never lowered back (and an unprivileged user could not)
    assert set(_thread_nices(ray_like)) == {higher}
    assert set(_thread_nices(other)) == {base}
    assert lower_priority([2**22 + 12345], higher) == 0  # a pid that is gone: nothing, no error


def test_only_processes_started_since_a_snapshot_are_reniced(family: tuple[int, int]) -> None:
    # What _init does around ray.init: the driver's children from before (here: ``other``) keep their priority.
    ray_like, other = family
    base = os.nice(0)
    target = _above(base, 3)
    before = descendants(os.getpid()) - {ray_like, _grandchild(ray_like)}
    lower_priority(sorted(started_since(before)), target)
    assert set(_thread_nices(ray_like)) == set(_thread_nices(_grandchild(ray_like))) == {target}
    assert set(_thread_nices(other)) == {base}


def test_a_server_launched_before_ray_is_spared_with_what_it_starts_meanwhile(family: tuple[int, int]) -> None:
    # The model server is launched before the snapshot and loads beside ray.init: its own new children (vLLM's
    # engine processes; here the grandchild) are new since the snapshot, yet not Ray's.
    server, other = family
    before = descendants(os.getpid()) - {_grandchild(server)}
    assert started_since(before) == {_grandchild(server)}
    assert started_since(before, spare=[server]) == set()
    assert started_since(before - {other}, spare=[server]) == {other}


@pytest.mark.parametrize(
    ("overrides", "reniced"),
    [
        ({"model": {"launcher": "vllm"}}, True),
        ({"model": {"launcher": "llama-cpp"}}, True),
        ({"model": {"launcher": "vllm"}, "ray_niceness": 0}, False),
        ({"model": {"launcher": "vllm-actors"}}, False),  # the engines are Ray workers themselves
        ({"model": {"endpoint": "http://gpu-host:8000/v1"}}, False),  # the server is elsewhere
    ],
)
def test_renicing_only_where_agentbon_runs_the_server_beside_ray(overrides: dict, reniced: bool) -> None:
    assert shares_cpu_with_server(RunConfig(**overrides)) is reniced
