"""DPO pairs: TRL's prompt/chosen/rejected rows, conversational or plain, with test evidence in metadata."""

from __future__ import annotations

import json

from synth import make_run
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.export import export_pairs
from agentbon.report.data import load_run

GRID = {"a": "PFFP", "b": "FFFF", "c": "PIUF", "d": "PP"}


def rows(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_conversational_patch_pairs(tmp_path):
    store = make_run(tmp_path, GRID, {"s": {t: [0.0] * len(c) for t, c in GRID.items()}})
    out = tmp_path / "pairs.jsonl"
    stats = export_pairs(store, load_run(store), out)
    got = rows(out)
    assert stats.pairs == len(got) == 4 + 1  # a: 2 pass × 2 fail; c: 1 × 1 (U has no grade, I is not a sample)
    assert stats.tasks_with_pairs == 2 and stats.tasks_without == 2  # b all fail, d all pass
    for row in got:
        assert set(row) == {"prompt", "chosen", "rejected", "metadata"}
        assert row["prompt"][0]["role"] == "user" and row["chosen"][0]["role"] == "assistant"
        meta = row["metadata"]
        assert meta["chosen"]["grade"] == "pass" and meta["rejected"]["grade"] == "fail"
        assert meta["chosen"]["grade_tests"][0]["outcome"] == "passed"
        assert meta["rejected"]["evidence_tests"][0]["outcome"] == "failed"
        assert row["chosen"][0]["content"] != row["rejected"][0]["content"]
    assert {r["metadata"]["task_id"] for r in got} == {"a", "c"}


def test_plain_trajectory_pairs_and_cap(tmp_path):
    store = make_run(tmp_path, GRID, {"s": {t: [0.0] * len(c) for t, c in GRID.items()}})
    out = tmp_path / "pairs.jsonl"
    stats = export_pairs(store, load_run(store), out, fmt="plain", content="trajectory", max_per_task=1)
    got = rows(out)
    assert stats.pairs == 2 and len(got) == 2
    row = got[0]
    assert isinstance(row["prompt"], str) and row["prompt"].startswith("system: You fix bugs.")
    assert row["chosen"].startswith("assistant: edit") and "extra" not in row["chosen"]


def test_identical_patches_with_opposite_labels_are_skipped(tmp_path):
    from agentbon.store import RunStore
    from agentbon.types import Verdict

    store = make_run(tmp_path, {"t": "PF"}, {"s": {"t": [0, 0]}})
    # Rewrite rollout 1 as the same patch as rollout 0 (a flaky grade).
    r0, r1 = store.rollouts()["t/0"], store.rollouts()["t/1"]
    store.save_rollout(r1.model_copy(update={"patch": r0.patch}))
    store.save_verdict(Verdict(run_id=r1.run_id, task_id="t", rollout_id="t/1", role="grade", status="fail"))
    stats = export_pairs(RunStore(store.path), load_run(store), tmp_path / "p.jsonl")
    assert stats.pairs == 0 and stats.skipped == {"same patch, opposite labels (flaky)": 1}


def test_cli_rejects_unknown_format(tmp_path):
    store = make_run(tmp_path, GRID, {"s": {t: [0.0] * len(c) for t, c in GRID.items()}})
    ok = CliRunner().invoke(app, ["export", "pairs", str(store.path)])
    assert ok.exit_code == 0 and "5 pairs from 2 tasks" in ok.output
    bad = CliRunner().invoke(app, ["export", "pairs", str(store.path), "--format", "xml"], env={"COLUMNS": "300"})
    assert bad.exit_code == 2 and "expected one of conversational, plain" in bad.output
