"""Curves and calibration computed in threads (large runs) are the serial computation's, number for number."""

from __future__ import annotations

import numpy as np
import pytest

from agentbon.report import compute


def test_threaded_selectors_give_the_serial_curves(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    correct = (rng.random((40, 16)) < rng.random((40, 1))).astype(float)
    valid = rng.random((40, 16)) > 0.1
    scores = {f"s{i}": np.where(valid, np.round(correct + rng.normal(0, i, correct.shape), 1), np.nan) for i in range(4)}
    estimators: dict = {"s3": "softmax", "s2": "uniform"}
    serial = compute.compute_curves(correct, valid, scores, [1, 2, 4, 8], n_boot=50, estimators=estimators)
    pools: list[int] = []

    class Counted(compute.ThreadPoolExecutor):
        def __init__(self, workers: int) -> None:
            pools.append(workers)
            super().__init__(workers)

    monkeypatch.setattr(compute, "PARALLEL_CELLS", 0)
    monkeypatch.setattr(compute.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(compute, "ThreadPoolExecutor", Counted)
    threaded = compute.compute_curves(correct, valid, scores, [1, 2, 4, 8], n_boot=50, estimators=estimators)
    assert pools == [4]  # the threaded path ran: one thread per selector
    assert list(threaded.per_task_selected) == list(scores)
    for name in scores:
        np.testing.assert_array_equal(threaded.per_task_selected[name], serial.per_task_selected[name])
        np.testing.assert_array_equal(threaded.selected[name].mean, serial.selected[name].mean)
        np.testing.assert_array_equal(threaded.loss[name].lo, serial.loss[name].lo)


def test_threaded_calibration_gives_the_serial_blocks(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    from synth import make_run
    from test_calibration_report import CRITIC, GRID

    from agentbon.config import ReportConfig
    from agentbon.report import calibration
    from agentbon.report.data import load_run

    data = load_run(make_run(tmp_path, GRID, {"critic": CRITIC}))
    serial = calibration.calibration_section(data, ReportConfig(bootstrap=100))
    monkeypatch.setattr(compute, "PARALLEL_CELLS", 0)
    monkeypatch.setattr(compute.os, "cpu_count", lambda: 2)
    threaded = calibration.calibration_section(data, ReportConfig(bootstrap=100))
    assert [b.role for b in threaded.critics] == ["run", "baseline", "out-of-fold"]
    assert threaded == serial
