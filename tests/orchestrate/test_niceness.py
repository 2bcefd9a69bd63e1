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
from agentbon.orchestrate.cluster import lower_priority, ray_processes, shares_cpu_with_server

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")

# A child that starts a thread, then a grandchild, and sleeps; "ray" in its command line like Ray's processes.
PARENT = """
import subprocess, sys, threading, time  # ray-like
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)  # ray-like grandchild"])
print("ready", flush=True)
time.sleep(60)
"""


def _niceness(tid_dir: Path) -> int:
    return int((tid_dir / "stat").read_text().rsplit(")", 1)[1].split()[16])


def _thread_nices(pid: int) -> list[int]:
    return [_niceness(t) for t in Path(f"/proc/{pid}/task").iterdir()]


@pytest.fixture
def family() -> Iterator[tuple[int, int]]:
    """(a "ray" child with two threads, an unrelated child) of this process."""
    ray_like = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
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


def test_ray_processes_are_the_ray_descendants_only(family: tuple[int, int]) -> None:
    ray_like, other = family
    found = ray_processes(os.getpid())
    assert ray_like in found and _grandchild(ray_like) in found
    assert other not in found and os.getpid() not in found


def test_every_thread_is_reniced_and_a_nicer_one_is_left(family: tuple[int, int]) -> None:
    ray_like, other = family
    assert len(_thread_nices(ray_like)) >= 2 and set(_thread_nices(ray_like)) == {os.nice(0)}
    assert lower_priority([ray_like], 7) >= 2
    assert set(_thread_nices(ray_like)) == {7}
    assert lower_priority([ray_like], 5) == 0  # never lowered back (and an unprivileged user could not)
    assert set(_thread_nices(ray_like)) == {7}
    assert set(_thread_nices(other)) == {os.nice(0)}
    assert lower_priority([2**22 + 12345], 7) == 0  # a pid that is gone: nothing, no error


def test_descendants_below_a_ray_process_are_reniced_too(family: tuple[int, int]) -> None:
    ray_like, _ = family
    grandchild = _grandchild(ray_like)
    lower_priority(ray_processes(os.getpid()), 9)
    assert set(_thread_nices(grandchild)) == {9}


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
