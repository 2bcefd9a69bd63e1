"""report.md and report.html from a synthetic run: content, labels, self-containment, well-formed SVG."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from synth import make_run

from agentbon.report import build_report, render_html, render_markdown, write_reports
from agentbon.report.html import PASS_MAP_ROWS, charts
from agentbon.report.schema import TaskRow


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    rng = np.random.default_rng(1)
    grid, scores = {}, {"tests": {}, "critic": {}}
    for t in range(12):  # no infra errors: k = 8 is measured
        codes = "".join(rng.choice(list("PFFF")) for _ in range(8))
        grid[f"task-{t}"] = codes
        scores["tests"][f"task-{t}"] = [0.0] * 8  # uninformative: a verifier ceiling
        scores["critic"][f"task-{t}"] = [float(c == "P") + rng.random() for c in codes]
    return build_report(make_run(tmp_path_factory.mktemp("render"), grid, scores))


def test_markdown_has_every_table_and_labels(summary):
    md = render_markdown(summary)
    for heading in ("## Headline", "## What each doubling of N buys", "## Selectors at k = 8", "## Cost"):
        assert heading in md
    assert "## External references (published, SWE-bench Verified) — not measured by this run" in md
    assert "| SWE-Gym (learned verifier) | SWE-bench Verified | 16 | 20.6 | 42.8 | 32.0 | 10.8 | 3.1 |" in md
    assert "oracle (oracle: grading tests)" in md and "never a selector" in md
    assert "⚠ Verifier-shaped ceiling: from k = 1" in md


def test_html_is_self_contained(summary):
    html = render_html(summary)
    assert not re.search(r"<script|<link|<img|<iframe|url\(|@import", html, re.I)
    external = set(re.findall(r"https?://[^\"' <)]+", html)) - {"http://www.w3.org/2000/svg"}
    assert not external
    assert html.count("<svg") == 7  # curves, loss, gains, points vs cost, reliability, staged verification, pass map


def test_every_chart_is_well_formed_svg(summary):
    for caption, svg in charts(summary):
        root = ET.fromstring(svg)
        assert root.tag.endswith("svg"), caption
        assert root.findall(".//{http://www.w3.org/2000/svg}polyline") or root.findall(
            ".//{http://www.w3.org/2000/svg}rect"
        )


def test_pass_map_caps_rows_and_says_so(summary):
    rows = [TaskRow(task_id=f"t{i}", n=2, curve_n=2, correct=i % 3, infra_errors=0, cells="PF", coverage=[], winners={})
            for i in range(PASS_MAP_ROWS + 50)]  # fmt: skip
    big = summary.model_copy(update={"per_task": rows})
    caption, svg = charts(big)[-1]
    assert "50 more tasks not drawn" in caption
    assert svg.count('fill="#2ca02c"') == PASS_MAP_ROWS + 1  # one pass cell per drawn row, plus the legend


def test_write_reports_writes_three_files(tmp_path):
    store = make_run(tmp_path, {"t": "PF"}, {"s": {"t": [1.0, 0.0]}})
    paths = write_reports(store)
    assert sorted(p.name for p in paths.values()) == ["report.html", "report.md", "summary.json"]
    assert all(p.parent == store.path and p.stat().st_size > 0 for p in paths.values())
    assert not list(store.path.glob(".*.tmp"))
