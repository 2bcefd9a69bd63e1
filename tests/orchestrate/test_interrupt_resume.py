"""Ctrl-C and kill -9 of the driver mid-run: sandboxes removed, store consistent, the run resumes with
no rollout lost and none recorded twice. Each run is a fresh driver process with its own local Ray."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentbon.store import RunStore
from agentbon.testing import FakeBackend

pytestmark = pytest.mark.ray
SCRIPT = Path(__file__).parent / "fake_batch.py"


def start(root: Path, n: int, tasks: str, default: str, *extra: str) -> subprocess.Popen:
    out = open(root / f"driver-{time.time():.3f}.log", "w")
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(root), "r", str(n), tasks, "--default", default, *extra],
        stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, "RAY_AUTH_MODE": "disabled"},
    )


def wait_for(check: Callable[[], bool], timeout: float = 180.0) -> None:
    deadline = time.time() + timeout
    while not check():
        if time.time() > deadline:
            raise TimeoutError("condition not reached")
        time.sleep(0.2)


def end_group(pgid: int) -> None:
    """Kill what is left of a driver's process group (a SIGKILLed driver leaves Ray agents behind), pid by pid."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    os.kill(int(entry.name), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue


def rollouts_recorded(root: Path) -> int:
    log = root / "runs" / "r" / "events.jsonl"
    return log.read_text().count('"type": "rollout"') if log.exists() else 0


def live(root: Path) -> list[Path]:
    return FakeBackend(root=root / "sandboxes").live()


def check_complete(root: Path, tasks: str, n: int) -> tuple[int, int]:
    """(lost, duplicated) rollouts of the run."""
    counts = RunStore(root / "runs" / "r").rollout_counts()
    wanted = {f"{t}/{i}" for t in tasks.split(",") for i in range(n)}
    return len(wanted - set(counts)), sum(c - 1 for c in counts.values())


def ctrl_c(driver: subprocess.Popen) -> None:
    os.killpg(driver.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group


def sigterm(driver: subprocess.Popen) -> None:
    # A scheduler's `kill PID` reaches the driver only (not Ray's workers), after ray.init installed its own handler.
    os.kill(driver.pid, signal.SIGTERM)


@pytest.mark.parametrize(("stop", "extra"), [(ctrl_c, ()), (sigterm, ("--sigterm-as-ctrl-c",))], ids=["ctrl-c", "sigterm"])
def test_stopping_the_driver_removes_sandboxes_and_the_run_resumes(tmp_path: Path, stop, extra) -> None:
    driver = start(tmp_path, 3, "a,b", "nope sleep:4", *extra)
    try:
        wait_for(lambda: len(live(tmp_path)) >= 2)
        stop(driver)
        assert driver.wait(timeout=120) == 130
    finally:
        end_group(driver.pid)
    store = RunStore(tmp_path / "runs" / "r")
    assert [e["type"] for e in store.events()][-2:] == ["interrupted", "end"]
    assert live(tmp_path) == []
    resumed = start(tmp_path, 3, "a,b", "nope")
    try:
        assert resumed.wait(timeout=300) == 0
    finally:
        end_group(resumed.pid)
    assert check_complete(tmp_path, "a,b", 3) == (0, 0)
    assert live(tmp_path) == []


def test_kill_9_of_the_driver_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    driver = start(tmp_path, 6, "a,b,c", "nope sleep:0.5")
    try:
        wait_for(lambda: rollouts_recorded(tmp_path) >= 4)
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=60)
    finally:
        end_group(driver.pid)
    before = rollouts_recorded(tmp_path)
    assert 4 <= before < 18
    resumed = start(tmp_path, 6, "a,b,c", "nope sleep:0.5")
    try:
        assert resumed.wait(timeout=300) == 0
    finally:
        end_group(resumed.pid)
    assert check_complete(tmp_path, "a,b,c", 6) == (0, 0)
    assert live(tmp_path) == []  # the dead driver's sandboxes were reaped when the run resumed
    last = json.loads(Path(sorted(tmp_path.glob("driver-*.log"))[-1]).read_text().strip().splitlines()[-1])
    assert last["already_done"] == before and last["planned"] == 18 - before
