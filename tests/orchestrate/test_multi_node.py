"""More than one machine: a two-node Ray cluster on this machine loses its worker node mid-run; every
rollout still completes (retried on the head) and nothing is lost or recorded twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.ray


def test_worker_node_killed_mid_run_loses_nothing(tmp_path: Path) -> None:
    script = Path(__file__).parent / "two_node.py"
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=600,
        env={**os.environ, "RAY_AUTH_MODE": "disabled"},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["killed"] and not out["interrupted"]
    # The rollouts running on the dead node failed as infrastructure, on that node, and were retried.
    on_worker = [e for e in out["infra"] if e["node_id"] == out["worker"]]
    assert len(on_worker) >= 2, out["infra"]
    assert {e["error"] for e in on_worker} <= {"NodeDiedError", "WorkerCrashedError", "OwnerDiedError", "RaySystemError"}
    assert out["counts"] == {f"{t}/{i}": 1 for t in "abc" for i in range(4)}
    assert out["statuses"] == ["submitted"]
    assert not out["still_connected"]  # the run disconnected from the cluster it joined, which keeps running
