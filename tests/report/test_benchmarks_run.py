"""The report's benchmarks still run: each, at a size of a few seconds, exits 0 and prints its figures (a change to
the report's data that a benchmark's synthetic run does not follow breaks it here, not on the next measurement)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("script", "args", "printed"),
    [
        # Over the out-of-fold fit's limit (20,000 candidates), as at full size: the synthetic run has no rollouts.
        ("report_bench.py", ["--tasks", "1400", "--n", "16", "--bootstrap", "20"], "staged verification replay:"),
        ("budget_bench.py", ["--tasks", "40", "--n", "8"], "uniform"),
    ],
)
def test_the_benchmark_runs_small(script, args, printed):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ran = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *args], capture_output=True, text=True,
                         env=env, timeout=600)  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert printed in ran.stdout, ran.stdout[-2000:]
