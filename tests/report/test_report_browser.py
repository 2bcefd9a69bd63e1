"""report.html opened in a real headless Chromium: the screenshot shows every plot series and the pass map."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest
from synth import make_run

from agentbon.report import write_reports
from agentbon.report.html import PASS_MAP_COLORS
from agentbon.report.svg import COVERAGE_COLOR, PALETTE

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
Image = pytest.importorskip("PIL.Image", reason="Pillow is needed to read the screenshot (pip install agentbon[dev])")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")


def rgb(color: str) -> np.ndarray:
    return np.array([int(color[i : i + 2], 16) for i in (1, 3, 5)])


def pixels_of(image: np.ndarray, color: str) -> int:
    return int((np.abs(image.astype(int) - rgb(color)) <= 2).all(axis=-1).sum())


def test_screenshot_shows_the_plots(tmp_path):
    rng = np.random.default_rng(2)
    grid, scores = {}, {"tests": {}, "critic": {}}
    for t in range(20):
        codes = "".join(rng.choice(list("PPFFFI")) for _ in range(8))
        grid[f"task-{t:02d}"] = codes
        scores["tests"][f"task-{t:02d}"] = [float(c == "P") if rng.random() < 0.8 else 0.5 for c in codes]
        scores["critic"][f"task-{t:02d}"] = rng.random(8).tolist()
    html = write_reports(make_run(tmp_path, grid, scores))["html"]
    shot = tmp_path / "shot.png"
    cmd = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={shot}", "--window-size=1200,4200", "--hide-scrollbars", html.as_uri(),
    ]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.exists(), f"chromium wrote no screenshot (exit {done.returncode}): {done.stderr[-2000:]}"
    image = np.asarray(Image.open(shot).convert("RGB"))
    assert image.shape[:2] == (4200, 1200)
    counts = {
        "coverage line": pixels_of(image, COVERAGE_COLOR),
        "tests line/bars": pixels_of(image, PALETTE[0]),
        "critic line/bars": pixels_of(image, PALETTE[1]),
        "pass cells": pixels_of(image, PASS_MAP_COLORS["P"]),
        "fail cells": pixels_of(image, PASS_MAP_COLORS["F"]),
        "infra cells": pixels_of(image, PASS_MAP_COLORS["I"]),
    }
    assert all(n > 300 for n in counts.values()), counts
    assert pixels_of(image, "#ff00ff") == 0  # a colour the report never uses: the check can fail
    # The coverage series sits in the first plot, above the pass map (which has no blue).
    rows = np.nonzero((np.abs(image.astype(int) - rgb(COVERAGE_COLOR)) <= 2).all(axis=-1))[0]
    pass_rows = np.nonzero((np.abs(image.astype(int) - rgb(PASS_MAP_COLORS["P"])) <= 2).all(axis=-1))[0]
    assert np.median(rows) < np.median(pass_rows)
