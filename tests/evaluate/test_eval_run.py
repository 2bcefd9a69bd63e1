"""``agentbon eval`` end to end on the session's Ray with fakes: the fake verifier passes patches adding ``FIX``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_support import MODEL, patch, pred, write_jsonl
from orch_support import fakes, make_tasks
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.evaluate import eval_config, evaluate
from agentbon.evaluate.report import read_eval_report
from agentbon.evaluate.seed import EXIT_STATUS
from agentbon.evaluate.service import eval_factories
from agentbon.orchestrate import Factories
from agentbon.preflight import preflight
from agentbon.store import RunStore

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("ray_session")]


def verifications(root: Path) -> list[str]:
    log = root / "verify.log"
    return log.read_text().splitlines() if log.exists() else []


def cfg(root: Path, *overrides: str, **direct):
    """A run config as orch_support's, less ``model.name``: an eval names the predictions' model (inert.py)."""
    from agentbon.config import load_config

    return load_config(overrides=[f"run_dir={root / 'runs'}", "select.selectors=[first, oracle]", "infra_retries=0",
                                  "infra_backoff_s=0", *overrides], **direct)  # fmt: skip


def test_eval_grades_predictions_and_writes_the_harness_summary(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a", "b", "c", "d", "e"])
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [pred("a", patch("FIX")), pred("b", patch("nope")), pred("c", ""), pred("d", patch("VERIFY-DOWN")),
         pred("zz", patch("FIX")), "not json"],
    )  # fmt: skip
    result = evaluate(tasks, preds, cfg(tmp_path, run_id="ev"), suite="suite.jsonl", factories=fakes(tmp_path))
    r = result.report
    assert (r.resolved_ids, r.unresolved_ids, r.empty_patch_ids, r.error_ids) == (["a"], ["b"], ["c"], ["d"])
    assert r.submitted_ids == ["a", "b", "c", "d"] and r.completed_ids == ["a", "b"]
    assert (r.submitted_instances, r.completed_instances, r.resolved_instances) == (4, 2, 1)
    assert (r.unresolved_instances, r.empty_patch_instances, r.error_instances) == (1, 1, 1)
    assert r.total_instances == 5 and r.incomplete_ids == ["e"]
    assert [(e.line, e.key) for e in r.input_errors] == [(5, "instance_id"), (6, "")]
    assert r.instances["a"].verdict == "pass" and r.instances["d"].verdict == "infra_error"
    assert "EngineUnavailable" in r.instances["d"].reason and r.model_name_or_path == MODEL
    assert r.instances["d"].error == "infra" and r.retry_ids == ["d"]
    assert read_eval_report(result.path / "eval_report.json") == r
    assert result.exit_code == 3  # d could not be graded (infra)
    store = RunStore(result.path)
    rollouts = store.rollouts()
    assert sorted(rollouts) == ["a/0", "b/0", "d/0"]  # empty and bad entries are not graded
    assert {x.exit_status for x in rollouts.values()} == {EXIT_STATUS} and rollouts["a/0"].patch == patch("FIX")
    # Each patch is stored once in the run directory: in the event log, not again in per-rollout files.
    forms = (patch("nope"), json.dumps(patch("nope"))[1:-1])  # as written, and inside a JSON string
    copies = {f.name: sum(f.read_text(errors="replace").count(x) for x in forms) for f in result.path.rglob("*") if f.is_file()}
    assert {name: n for name, n in copies.items() if n} == {"events.jsonl": 1}
    recorded = store.config()
    assert recorded is not None and recorded.model.name == MODEL and recorded.n == 1
    # Only the grade runs: no agent, no evidence verification.
    assert sorted(verifications(tmp_path)) == ["a/0 grade", "b/0 grade", "d/0 grade"]
    assert {v.status for v in store.verdicts("evidence").values()} == {"undecided"}
    assert not (tmp_path / "sandboxes").exists() or not any((tmp_path / "sandboxes").iterdir())


def test_second_invocation_verifies_only_what_lacks_a_verdict(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a", "b", "c"])
    preds = write_jsonl(tmp_path / "p.jsonl", [pred("a", patch("FIX")), pred("b", patch("nope"))])
    first = evaluate(tasks, preds, cfg(tmp_path), suite="s.jsonl", factories=fakes(tmp_path))
    assert first.exit_code == 0 and first.run_id.startswith(f"eval-s-{MODEL}-")
    assert len(verifications(tmp_path)) == 2
    again = evaluate(tasks, preds, cfg(tmp_path), suite="s.jsonl", factories=fakes(tmp_path))
    assert again.run_id == first.run_id and again.batch is None and again.exit_code == 0
    assert again.report == first.report and len(verifications(tmp_path)) == 2
    # More predictions into the same run: only the new one is verified.
    more = write_jsonl(tmp_path / "more.jsonl", [pred("a", patch("FIX")), pred("b", patch("nope")), pred("c", patch("FIX"))])
    third = evaluate(tasks, more, cfg(tmp_path, run_id=first.run_id), suite="s.jsonl", factories=fakes(tmp_path))
    assert third.report.resolved_ids == ["a", "c"] and third.recorded == ["c"]
    assert sorted(verifications(tmp_path)) == ["a/0 grade", "b/0 grade", "c/0 grade"]
    assert sum(RunStore(first.path).rollout_counts().values()) == 3


def test_an_eval_run_named_by_an_older_version_is_resumed_by_the_same_command(tmp_path: Path) -> None:
    from agentbon.evaluate import eval_run_id, prepare

    tasks = make_tasks(tmp_path, ["a", "b"])
    preds = write_jsonl(tmp_path / "p.jsonl", [pred("a", patch("FIX"))])
    older = eval_run_id("s.jsonl", MODEL, prepare(preds, tasks)[0], None)
    first = evaluate(tasks, preds, cfg(tmp_path, run_id=older), suite="s.jsonl", factories=fakes(tmp_path))
    log = first.path / "events.jsonl"  # as an older version left it: no record of the run's tasks
    log.write_text("".join(line for line in log.read_text().splitlines(keepends=True) if '"type": "tasks"' not in line))
    again = evaluate(tasks, preds, cfg(tmp_path), suite="s.jsonl", factories=fakes(tmp_path))
    assert again.run_id == older and again.batch is None and verifications(tmp_path) == ["a/0 grade"]
    # A suite of the same file name that grades the instance otherwise: not the run the older version graded it in.
    other = [t.model_copy(update={"grade": t.grade.model_copy(update={"command": "false"})}) for t in tasks]
    elsewhere = evaluate(other, preds, cfg(tmp_path), suite="s.jsonl", factories=fakes(tmp_path))
    assert elsewhere.run_id != older and elsewhere.batch is not None


def test_infra_errors_are_retried_on_the_next_invocation(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    preds = write_jsonl(tmp_path / "p.jsonl", [pred("a", patch("VERIFY-DOWN FIX"))])
    first = evaluate(tasks, preds, cfg(tmp_path, run_id="ev"), factories=fakes(tmp_path))
    assert first.report.error_ids == ["a"] and first.exit_code == 3
    again = evaluate(tasks, preds, cfg(tmp_path, run_id="ev"), factories=fakes(tmp_path))
    assert again.batch is not None and verifications(tmp_path) == ["a/0 grade", "a/0 grade"]


def test_a_changed_patch_for_a_graded_instance_is_refused(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a", "b"])
    evaluate(tasks, write_jsonl(tmp_path / "1.jsonl", [pred("a", patch("nope"))]), cfg(tmp_path, run_id="ev"),
             factories=fakes(tmp_path))  # fmt: skip
    changed = write_jsonl(tmp_path / "2.jsonl", [pred("a", patch("FIX")), pred("b", patch("FIX"))])
    result = evaluate(tasks, changed, cfg(tmp_path, run_id="ev"), factories=fakes(tmp_path))
    assert [(e.line, e.key) for e in result.input_errors] == [(1, "model_patch")]
    assert result.report.submitted_ids == ["b"] and result.report.resolved_ids == ["b"]
    assert RunStore(result.path).rollouts()["a/0"].patch == patch("nope") and result.exit_code == 2


def test_eval_preflight_needs_no_model_extras_or_endpoint(tmp_path: Path) -> None:
    tasks = make_tasks(tmp_path, ["a"])
    c = eval_config(cfg(tmp_path, "model.endpoint=http://127.0.0.1:9/v1"), MODEL)
    assert [p.check for p in preflight(c, tasks, Factories(), checks=["extras", "endpoint"])] == ["endpoint"]
    assert preflight(c, tasks, eval_factories(), checks=["extras", "endpoint"]) == []
    vllm = c.model.model_copy(update={"endpoint": None, "launcher": "vllm"})
    assert preflight(c.model_copy(update={"model": vllm}), tasks, eval_factories(),
                     checks=["extras", "endpoint", "settings"]) == []  # fmt: skip


# ------------------------------------------------------------------------------------------------ the CLI


def suite_file(tmp_path: Path, ids: list[str]) -> Path:
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(t.model_dump_json() + "\n" for t in make_tasks(tmp_path, ids)))
    return suite


def invoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suite: Path, preds: Path, *args: str):
    monkeypatch.setattr("agentbon.cli.eval.make_factories", lambda: fakes(tmp_path))
    argv = ["eval", str(suite), "--predictions", str(preds), "--run-dir", str(tmp_path / "runs"),
            "-c", "select.selectors=[first, oracle]", "-c", "infra_retries=0", *args]  # fmt: skip
    return CliRunner().invoke(app, argv, catch_exceptions=False)


def test_cli_exit_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = suite_file(tmp_path, ["a", "b"])
    ok = invoke(tmp_path, monkeypatch, suite, write_jsonl(tmp_path / "ok.jsonl", [pred("a", patch("FIX")), pred("b", "")]))
    assert ok.exit_code == 0, ok.output
    assert "a\tresolved" in ok.output and "b\tempty_patch" in ok.output and "eval_report.json" in ok.output
    bad = invoke(tmp_path, monkeypatch, suite, write_jsonl(tmp_path / "bad.jsonl", [pred("a", patch("FIX")), "{"]))
    assert bad.exit_code == 2 and "bad.jsonl:2: not JSON" in bad.output and "a\tresolved" in bad.output
    down = invoke(tmp_path, monkeypatch, suite, write_jsonl(tmp_path / "down.jsonl", [pred("b", patch("VERIFY-DOWN"))]))
    assert down.exit_code == 3 and "1 prediction(s) not graded: b" in down.output
    two = write_jsonl(tmp_path / "two.jsonl", [pred("a", patch("FIX")), pred("b", patch("FIX"), model="m2")])
    several = invoke(tmp_path, monkeypatch, suite, two)
    assert several.exit_code == 2 and "--model" in several.output
    picked = invoke(tmp_path, monkeypatch, suite, two, "--model", "m2")
    assert picked.exit_code == 0 and "b\tresolved" in picked.output and "a\t" not in picked.output
    missing = invoke(tmp_path, monkeypatch, suite, tmp_path / "nope.jsonl")
    assert missing.exit_code == 2 and "no such predictions file" in missing.output
    runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
    # ok and bad grade the same patches (one run); down; m2. Nothing recorded for the two refused invocations.
    assert len(runs) == 3 and all(r.startswith("eval-suite-") for r in runs)


def test_before_drive_runs_under_the_lock_before_the_planner_and_can_stop_the_run(tmp_path: Path) -> None:
    from agentbon.errors import ConfigError
    from agentbon.orchestrate import run_batch

    tasks = make_tasks(tmp_path, ["a"])
    seen: list[str] = []

    def hook(store: RunStore) -> None:
        seen.append(store.tasks()[0].task_id)
        with pytest.raises(ConfigError, match="in use"), store.lock():  # the driver holds the run
            pass
        raise ConfigError("stop here")

    with pytest.raises(ConfigError, match="stop here"):
        run_batch(tasks, cfg(tmp_path, n=2, run_id="r"), factories=fakes(tmp_path), before_drive=hook)
    assert seen == ["a"] and RunStore(tmp_path / "runs" / "r").rollouts() == {}
    assert verifications(tmp_path) == []


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("model.temperature=0.2", "model.temperature=0.2 does nothing with agentbon eval"),
        ("model.max_tokens=64", "model.max_tokens=64 does nothing with agentbon eval"),
        ("model.name=mine", "model.name='mine' does nothing with agentbon eval"),
        ("model.launcher=vllm", "model.launcher='vllm' does nothing with agentbon eval"),
        ("model.ctx=4096", "model.ctx=4096 does nothing with agentbon eval"),
        ("model.endpoint=http://127.0.0.1:9/v1", "model.endpoint='http://127.0.0.1:9/v1' does nothing with agentbon "
                                                 "eval unless a selector asks the judge"),
        ("model.retries=1", "model.retries=1 does nothing with agentbon eval unless a selector asks the judge"),
    ],
)  # fmt: skip
def test_cli_refuses_model_settings_an_eval_never_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str, named: str
) -> None:
    suite = suite_file(tmp_path, ["a"])
    refused = invoke(tmp_path, monkeypatch, suite, write_jsonl(tmp_path / "p.jsonl", [pred("a", patch("FIX"))]),
                     "-c", setting)  # fmt: skip
    assert refused.exit_code == 2 and named in " ".join(refused.output.split()), refused.output
    assert not (tmp_path / "runs").exists() and verifications(tmp_path) == []  # nothing graded


def test_cli_takes_the_judge_client_settings_and_refuses_a_judge_without_an_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = suite_file(tmp_path, ["a"])
    preds = write_jsonl(tmp_path / "p.jsonl", [pred("a", patch("FIX"))])
    judge = ("-c", "select.selectors=[critic, oracle]", "-c", "select.critic=judge")
    refused = invoke(tmp_path, monkeypatch, suite, preds, *judge)
    assert refused.exit_code == 2 and "select.critic=judge needs model.endpoint" in " ".join(refused.output.split())
    # With the judge's endpoint (nothing listens: the judge call fails on infrastructure, the grade stands).
    taken = invoke(tmp_path, monkeypatch, suite, preds, *judge, "-c", "model.endpoint=http://127.0.0.1:9/v1",
                   "-c", "model.retries=0")  # fmt: skip
    assert "does nothing" not in taken.output and "a\tresolved" in taken.output, taken.output


def test_cli_timeout_is_the_harness_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    suite = suite_file(tmp_path, ["a"])
    done = invoke(tmp_path, monkeypatch, suite, write_jsonl(tmp_path / "p.jsonl", [pred("a", patch("FIX"))]), "-t", "7")
    assert done.exit_code == 0, done.output
    [run] = (tmp_path / "runs").iterdir()
    assert RunStore(run).config_data()["verify"]["timeout_s"] == 7
    assert "--timeout" in CliRunner().invoke(app, ["eval", "--help"]).output
