"""Reading predictions files (JSON list, JSON object by id, JSONL) and sorting them against a suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_support import MODEL, patch, pred, write_jsonl

from agentbon.evaluate import PredictionsFileError, SeveralModels, match, read_predictions
from agentbon.types import RepoSource, Task, TestSet


def tasks(*ids: str) -> list[Task]:
    repo = RepoSource(url="/nowhere", base_commit="HEAD")
    return [Task(task_id=t, problem_statement="p", repo=repo, grade=TestSet(command="true")) for t in ids]


def test_jsonl_and_json_list_read_the_same(tmp_path: Path) -> None:
    entries = [pred("a", patch("FIX")), pred("b", "")]
    from_jsonl, e1 = read_predictions(write_jsonl(tmp_path / "p.jsonl", entries))
    listed = tmp_path / "p.json"
    listed.write_text(json.dumps(entries, indent=2))
    from_list, e2 = read_predictions(listed)
    assert e1 == e2 == []
    assert [(p.instance_id, p.model_patch) for p in from_jsonl] == [(p.instance_id, p.model_patch) for p in from_list]
    assert [p.line for p in from_jsonl] == [1, 2]
    assert [p.line for p in from_list] == [2, 7]  # the line each item of the list starts on


def test_json_object_keyed_by_instance_id(tmp_path: Path) -> None:
    path = tmp_path / "preds.json"
    path.write_text(json.dumps({"a": pred("a", patch("FIX")), "b": pred("b", None)}))
    predictions, errors = read_predictions(path)
    assert errors == [] and [p.instance_id for p in predictions] == ["a", "b"]
    assert predictions[1].model_patch == "" and predictions[1].empty


def test_bad_lines_are_errors_naming_file_line_and_key_and_the_rest_is_read(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "p.jsonl",
        [
            pred("a", patch("FIX")),
            "{not json",
            {"instance_id": "c", "model_patch": "x"},  # no model_name_or_path
            pred("d", 42),
            "[1, 2]",
            {"instance_id": "", "model_name_or_path": MODEL, "model_patch": ""},
            pred("g", patch("FIX")),
        ],
    )
    predictions, errors = read_predictions(path)
    assert [p.instance_id for p in predictions] == ["a", "g"]
    assert [(e.line, e.key) for e in errors] == [
        (2, ""), (3, "model_name_or_path"), (4, "model_patch"), (5, ""), (6, "instance_id"),
    ]
    assert all(str(path) in str(e) for e in errors)
    assert str(errors[0]).startswith(f"{path}:2: not JSON")
    assert errors[1].instance_id == "c"


def test_a_file_that_is_not_predictions_gives_an_error_per_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "tasks.jsonl", [{"task_id": "a", "problem_statement": "x"}] * 3)
    predictions, errors = read_predictions(path)
    assert predictions == [] and [(e.line, e.key) for e in errors] == [(i, "instance_id") for i in (1, 2, 3)]
    assert "missing: instance_id, model_name_or_path, model_patch" in errors[0].problem


@pytest.mark.parametrize("content", [None, b"\xff\xfe\x00bad", b"[{\"instance_id\": \"a\",", b"", b"\n\n"])
def test_unreadable_file_grades_nothing(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "p.json"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(PredictionsFileError, match=str(path)):
        read_predictions(path)


def test_match_sorts_unknown_duplicate_empty_and_blank(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "p.jsonl",
        [pred("a", patch("FIX")), pred("zz", patch("FIX")), pred("a", patch("other")), pred("b", "  \n"), pred("c", patch("x")),
         pred("d", None), pred("e", patch("FIX"))],
    )  # fmt: skip
    predictions, _ = read_predictions(path)
    m = match(predictions, tasks("a", "b", "c", "d"), str(path), suite="suite.jsonl", unloaded={"e": "e.jsonl:1: bad"})
    assert sorted(m.graded) == ["a", "c"] and sorted(m.empty) == ["d"] and sorted(m.blank) == ["b"]
    assert sorted(m.unloaded) == ["e"] and sorted(m.submitted) == ["a", "b", "c", "d", "e"]
    assert m.graded["a"].line == 3 and m.graded["a"].model_patch == patch("other")  # the last of an id, as the harness
    assert [(e.line, e.key, e.instance_id) for e in m.errors] == [(1, "instance_id", "a"), (2, "instance_id", "zz")]
    assert "line 3 is graded" in m.errors[0].problem and "not a task of suite.jsonl" in m.errors[1].problem
    assert m.model == MODEL


def test_duplicates_in_one_json_list_line_keep_the_last(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps([pred("a", patch("one")), pred("a", patch("two"))]))  # both items start on line 1
    predictions, _ = read_predictions(path)
    m = match(predictions, tasks("a"), str(path))
    assert m.graded["a"].model_patch == patch("two") and len(m.errors) == 1


def test_several_models_need_a_pick(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [pred("a", patch("FIX")), pred("b", patch("FIX"), model="other")])
    predictions, _ = read_predictions(path)
    with pytest.raises(SeveralModels, match="--model"):
        match(predictions, tasks("a", "b"), str(path))
    picked = match(predictions, tasks("a", "b"), str(path), model="other")
    assert sorted(picked.graded) == ["b"] and picked.errors == [] and picked.model == "other"


def test_eval_config_grades_one_candidate_per_task_and_keeps_explicit_settings() -> None:
    from agentbon.config import load_config
    from agentbon.evaluate import eval_config

    c = eval_config(load_config(overrides=["n=8", "model.name=other"]), "org/model-x")
    assert (c.n, c.early_stop, c.model.name, c.select.selectors, c.ray_niceness) == (1, False, "org/model-x", ["oracle"], 0)
    kept = eval_config(load_config(overrides=["select.selectors=[tests, oracle]", "ray_niceness=5"]), "m")
    assert (kept.select.selectors, kept.ray_niceness) == (["tests", "oracle"], 5)


def test_default_run_id_follows_the_patches(tmp_path: Path) -> None:
    from agentbon.evaluate import eval_run_id

    def run_id(entries: list, suite: tuple[str, ...] = ("a", "b"), path: str = "sets/verified.jsonl") -> str:
        predictions, _ = read_predictions(write_jsonl(tmp_path / "p.jsonl", entries))
        return eval_run_id(path, "org/m", match(predictions, tasks(*suite), "p"), tasks(*suite))

    one = run_id([pred("a", patch("FIX"), model="org/m"), pred("b", "", model="org/m")])
    assert one.startswith("eval-verified-org-m-") and one == run_id([pred("a", patch("FIX"), model="org/m")])
    assert one != run_id([pred("a", patch("FIX2"), model="org/m")])
    # Another suite that shares the file name is another run; the same suite elsewhere is the same one.
    assert one != run_id([pred("a", patch("FIX"), model="org/m")], suite=("a", "b", "c"))
    assert one == run_id([pred("a", patch("FIX"), model="org/m")], path="moved/verified.jsonl")


def test_swebench_instances_are_graded_under_the_harness_limits_unless_set() -> None:
    from agentbon.config import load_config
    from agentbon.evaluate import eval_config
    from agentbon.evaluate.run import HARNESS_TEST_TIMEOUT_S

    instances = [t.model_copy(update={"kind": "swebench"}) for t in tasks("a", "b")]
    c = eval_config(load_config(), "m", instances)
    assert (c.verify.timeout_s, c.sandbox.cpus) == (HARNESS_TEST_TIMEOUT_S, None)
    kept = eval_config(load_config(overrides=["verify.timeout_s=60", "sandbox.cpus=2"]), "m", instances)
    assert (kept.verify.timeout_s, kept.sandbox.cpus) == (60, 2)
    own = eval_config(load_config(), "m", tasks("a"))  # agentbon's own tasks keep agentbon's limits
    assert (own.verify.timeout_s, own.sandbox.cpus) == (300, 1.0)
    assert load_config(overrides=["sandbox.cpus=none"]).sandbox.cpus is None
