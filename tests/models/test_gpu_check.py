"""scripts/gpu_check.py, the one prepared command for a lent GPU machine, says what it checked and what it did not.

Here (no GPU) it stops after the GPU check with exit status 3 and lists every check as not done, with the reason,
beside what it never checks anywhere. Its full run needs a GPU host with vLLM."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gpu_check.py"


def test_without_a_gpu_it_says_what_it_did_not_check_and_why(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch", reason="the script needs torch (the critic extra brings it)")
    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: this test is about a machine without one")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--random-model"], capture_output=True, text=True, timeout=300,
        env={**os.environ, "OUT": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 3, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads((tmp_path / "gpu_check.json").read_text())
    assert result["ok"] is False and result["checked"] == {}
    assert set(result["not_checked"]) == {"gpu", "gpu_host_rule", "vllm_engine", "best_of_n", "prefix_cache"}
    assert all("no CUDA GPU visible" in why for why in result["not_checked"].values())
    assert any("placement groups" in line for line in result["never_checked_here"])
