"""The driver's own check after the end-of-run reap on a local Ray: what outlived the reapers is removed and named."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from orch_support import config, fakes

from agentbon.orchestrate.batch import _check_nothing_left
from agentbon.orchestrate.events import Recorder, Warning
from agentbon.store import RunStore
from agentbon.testing import FakeBackend


def leftover(root: Path, labels: dict[str, str]) -> Path:
    """A live fake sandbox, as one that a reaper missed would be."""
    where = root / "sandboxes" / "live" / uuid.uuid4().hex[:12]
    where.mkdir(parents=True)
    (where / "labels.json").write_text(json.dumps(labels))
    return where


def test_a_sandbox_that_outlived_the_reap_is_removed_and_the_run_says_so(tmp_path: Path) -> None:
    ours = leftover(tmp_path, {"run": "r", "task": "a", "warm": "1"})
    other = leftover(tmp_path, {"run": "another", "task": "a"})
    store = RunStore(tmp_path / "runs" / "r")
    store.create({}, [])
    _check_nothing_left(config(tmp_path, run_id="r"), fakes(tmp_path), "r", Recorder(store, None))
    assert not ours.exists() and other.exists()  # only this run's
    warnings = [e.message for e in store.recorded(Warning)]
    assert warnings == [
        "1 sandbox(es) of this run were still on this machine after the end-of-run reap; removed now "
        "(docs/sandboxes.md, 'Warm sandboxes')"
    ]
    assert FakeBackend(root=tmp_path / "sandboxes").live({"run": "r"}) == []


def test_nothing_left_records_nothing(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs" / "r")
    store.create({}, [])
    _check_nothing_left(config(tmp_path, run_id="r"), fakes(tmp_path), "r", Recorder(store, None))
    assert store.recorded(Warning) == []
