"""The report's unusable-reply endings (issue 37): summary.json, report.md and report.html against a count made here
from the stored rollout.json files alone."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from unittest import mock

from synth import make_run

from agentbon.report import write_reports
from agentbon.report.schema import read_summary
from agentbon.types import Rollout

GRID = {"t1": "PFFFF", "t2": "FFFFI", "t3": "PPFFC", "t4": "FFFFF"}
ENDINGS = {  # rollout id -> (status, unusable) written over the synthetic record
    "t1/1": ("format_error", "cut_off"),
    "t1/2": ("format_error", "cut_off"),
    "t1/3": ("format_error", "search_not_found"),
    "t2/0": ("format_error", "malformed_block"),
    "t2/1": ("step_limit", "no_edit_blocks"),  # a limit met right after an unusable reply
    "t2/2": ("token_limit", None),  # a limit alone: not an unusable ending
    "t2/4": ("infra_error", "cut_off"),  # an infrastructure error is no ending of the model's: out
    "t3/3": ("format_error", "unknown_file"),
    "t3/4": ("cancelled", None),
    "t4/0": ("format_error", None),  # a format_error recorded before causes were
    "t4/1": ("agent_error", "cut_off"),
}


def run_with_endings(root: Path):
    store = make_run(root, GRID, {"tests": {t: [1.0] * 5 for t in GRID}})
    with mock.patch("agentbon.store.os.fsync"):
        for rid, (status, cause) in ENDINGS.items():
            old = store.rollouts()[rid]
            store.save_rollout(old.model_copy(update={"status": status, "unusable": cause}), [])
    return store


def independent_count(run_dir: Path) -> tuple[int, Counter]:
    """Finished rollouts and their unusable causes, read from each rollout folder's rollout.json as plain JSON."""
    finished, causes = 0, Counter()
    for path in sorted(run_dir.glob("*/*/rollout.json")):
        record = json.loads(path.read_text())
        if record["status"] in ("infra_error", "cancelled"):
            continue
        finished += 1
        if record.get("unusable"):
            causes[record["unusable"]] += 1
        elif record["status"] == "format_error":
            causes["unrecorded"] += 1
    return finished, causes


def test_the_reports_count_unusable_endings_as_the_stored_rollouts_do(tmp_path):
    store = run_with_endings(tmp_path)
    paths = write_reports(store)
    finished, causes = independent_count(store.path)
    assert (finished, sum(causes.values())) == (18, 8)  # the fixture is what the test means it to be
    summary = read_summary(paths["summary"])
    e = summary.endings
    assert (e.finished, e.unusable, dict(e.by_cause)) == (finished, sum(causes.values()), dict(causes))
    assert e.rate == round(sum(causes.values()) / finished, 6)
    assert list(e.by_cause) == ["cut_off", "no_edit_blocks", "malformed_block", "unknown_file", "search_not_found",
                                "unrecorded"]  # fmt: skip
    raw = json.loads(paths["summary"].read_text())
    assert raw["version"] == 7 and raw["endings"]["by_cause"]["cut_off"] == causes["cut_off"] == 3
    markdown = paths["markdown"].read_text()
    assert "## Unusable replies (how rollouts ended)" in markdown
    assert "| cut_off | 3 | 16.7 |" in markdown and "| all | 8 | 44.4 |" in markdown
    assert "8 of 18 finished rollouts ended on a reply the agent could not use" in markdown
    html = paths["html"].read_text()
    assert "Unusable replies (how rollouts ended)" in html and "<td>unrecorded</td><td>1</td>" in html


def test_a_run_without_unusable_endings_says_none(tmp_path):
    paths = write_reports(make_run(tmp_path, {"t1": "PF"}))
    summary = read_summary(paths["summary"])
    assert (summary.endings.finished, summary.endings.unusable, summary.endings.by_cause) == (2, 0, {})
    assert "| all | 0 | 0.0 |" in paths["markdown"].read_text()


def test_a_rollout_of_version_1_reads_without_a_cause():
    old = {"version": 1, "run_id": "r", "task_id": "t", "index": 0, "status": "format_error"}
    assert Rollout.model_validate(old).unusable is None
    assert Rollout(run_id="r", task_id="t", index=0, status="submitted").version == 2
