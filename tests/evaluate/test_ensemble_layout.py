"""An ensemble's layout: which prediction is rollout i of which instance, and what refuses the whole ensemble."""

from __future__ import annotations

from pathlib import Path

import pytest
from eval_support import patch, pred, write_jsonl

from agentbon.errors import ConfigError
from agentbon.evaluate.ensemble import EnsembleInputError, build_ensemble, ensemble_run_id
from agentbon.evaluate.ensemble_run import ensemble_config, trajectory_free_selectors
from agentbon.evaluate.predictions import PredictionsFileError
from agentbon.types import RepoSource, Task, TestSet


def tasks_of(*ids: str) -> list[Task]:
    return [Task(task_id=t, problem_statement="p", repo=RepoSource(url=".", base_commit="HEAD"), grade=TestSet())
            for t in ids]  # fmt: skip


def layout(ensemble) -> dict[str, list[tuple[int, str, int, int | None]]]:
    """Task → (index, system, sample, line) per slot."""
    return {
        tid: [(s.index, s.system.name, s.sample, s.prediction.line if s.prediction else None) for s in slots]
        for tid, slots in ensemble.slots.items()
    }


def test_files_then_models_then_samples_each_take_their_own_indices(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [
        pred("x", patch("1")), pred("y", patch("2"), model="m2"), pred("x", patch("3"), model="m2"),
        pred("y", patch("4")),
    ])  # fmt: skip
    b = write_jsonl(tmp_path / "b.jsonl", [pred("x", patch("5")), pred("x", patch("6")), pred("z", patch("7"))])
    e = build_ensemble([a, b], tasks_of("x", "y", "z", "w"))
    assert [(s.name, s.first, s.width) for s in e.systems] == [
        (f"{a}:some-model", 0, 1), (f"{a}:m2", 1, 1), (f"{b}:some-model", 2, 2),
    ]  # fmt: skip
    assert e.n == 4 and e.not_predicted == ["w"]
    sa, sm2, sb = (s.name for s in e.systems)
    assert layout(e) == {
        "x": [(0, sa, 0, 1), (1, sm2, 0, 3), (2, sb, 0, 1), (3, sb, 1, 2)],
        "y": [(0, sa, 0, 4), (1, sm2, 0, 2), (2, sb, 0, None), (3, sb, 1, None)],  # b has no y: empty patches
        "z": [(0, sa, 0, None), (1, sm2, 0, None), (2, sb, 0, 3), (3, sb, 1, None)],
    }
    assert e.slots["y"][2].patch == "" and e.slots["y"][0].patch == patch("4")
    # The same inputs, the same layout and run id; another patch, another run.
    again = build_ensemble([a, b], tasks_of("x", "y", "z", "w"))
    assert ensemble_run_id("s.jsonl", again, tasks_of("x", "y", "z")) == ensemble_run_id("s.jsonl", e, tasks_of("x", "y", "z"))
    write_jsonl(b, [pred("x", patch("5")), pred("x", patch("6 changed")), pred("z", patch("7"))])
    changed = build_ensemble([a, b], tasks_of("x", "y", "z", "w"))
    assert ensemble_run_id("s.jsonl", changed, tasks_of("x", "y", "z")) != ensemble_run_id("s.jsonl", e, tasks_of("x", "y", "z"))


def test_each_index_is_one_harness_eval_of_its_system_and_sample(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [pred("x", patch("1")), pred("y", ""), pred("z", "  \n"), pred("x", patch("2"))])
    e = build_ensemble([a], tasks_of("x", "y", "z"), unloaded={"gone": "bad record"})
    first, second = e.matched(0), e.matched(1)
    assert (sorted(first.graded), sorted(first.empty), sorted(first.blank), first.index) == (["x"], ["y"], ["z"], 0)
    assert (sorted(second.submitted), second.graded["x"].line, second.index) == (["x"], 4, 1)


def test_a_prediction_for_a_task_that_did_not_load_is_left_out_and_named(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [pred("x", patch("1")), pred("gone", patch("2"))])
    e = build_ensemble([a], tasks_of("x"), unloaded={"gone": "bad record"})
    assert list(e.slots) == ["x"] and list(e.unloaded[0]) == ["gone"] and list(e.matched(0).unloaded) == ["gone"]


def test_any_unusable_entry_refuses_the_ensemble_naming_file_and_line(tmp_path: Path) -> None:
    a = write_jsonl(tmp_path / "a.jsonl", [pred("x", patch("1")), "not json", pred("nope", patch("2"))])
    b = write_jsonl(tmp_path / "b.jsonl", [pred("x", patch("3")), {"instance_id": "x", "model_patch": ""}])
    with pytest.raises(EnsembleInputError) as caught:
        build_ensemble([a, b], tasks_of("x"), suite="s.jsonl")
    assert [(e.file, e.line) for e in caught.value.errors] == [(str(a), 2), (str(a), 3), (str(b), 2)]
    text = str(caught.value)
    assert f"{a}:2: not JSON" in text and f"{a}:3: instance_id: 'nope' is not a task of s.jsonl" in text
    assert f"{b}:2: model_name_or_path: missing" in text and "nothing was graded" in text
    with pytest.raises(ConfigError, match="more than once"):
        build_ensemble([a, a], tasks_of("x"))
    with pytest.raises(PredictionsFileError, match="no such predictions file"):
        build_ensemble([a, tmp_path / "missing.jsonl"], tasks_of("x"))


def test_the_config_has_n_slots_and_the_selectors_that_need_no_trajectory(tmp_path: Path) -> None:
    from agentbon.config import load_config
    from agentbon.select import SELECTORS

    a = write_jsonl(tmp_path / "a.jsonl", [pred("x", patch("1")), pred("x", patch("2"), model="m2")])
    e = build_ensemble([a], tasks_of("x"))
    config = ensemble_config(load_config(overrides=[f"run_dir={tmp_path}"]), e, tasks_of("x"))
    assert config.n == 2 and config.model.name == "some-model+m2" and config.early_stop is False
    assert config.select.selectors == trajectory_free_selectors() == ["tests", "majority", "random", "oracle"]
    assert not any(SELECTORS[name].uses_critic for name in config.select.selectors)
    named = ensemble_config(load_config(overrides=[f"run_dir={tmp_path}", "select.selectors=[critic, oracle]"]), e,
                            tasks_of("x"))  # fmt: skip
    assert named.select.selectors == ["critic", "oracle"]  # what the config names is kept
