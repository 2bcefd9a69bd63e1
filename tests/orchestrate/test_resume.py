"""Resume identity (no Ray): which run a command finds, and which settings and task sets a resume refuses."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
import yaml

from agentbon.config import RunConfig, load_config
from agentbon.errors import ConfigError
from agentbon.orchestrate.resume import check_resumable, check_task_changes, default_run_id, resolve_run_id
from agentbon.store import RunStore
from agentbon.types import RepoSource, Task, TestSet


def tasks(*ids: str, statement: str = "fix it") -> list[Task]:
    return [
        Task(task_id=t, problem_statement=statement, repo=RepoSource(url="/x", base_commit="HEAD"),
             grade=TestSet(command="true"))
        for t in ids
    ]  # fmt: skip


def stored(tmp_path: Path, *overrides: str, ids: tuple[str, ...] = ("a",)) -> RunStore:
    store = RunStore(tmp_path / "run")
    store.create(load_config(overrides=list(overrides)).model_dump(mode="json"), tasks(*ids))
    return store


def test_two_suites_with_the_same_file_name_get_different_default_runs() -> None:
    config = load_config()
    lite, verified = tasks("a", "b"), tasks("a", "b", "c")
    assert default_run_id("lite/test.jsonl", config, lite) != default_run_id("verified/test.jsonl", config, verified)
    # The suite is its tasks: the same tasks under another name, in another order, or redefined (which the resume
    # then refuses by name unless --accept-task-changes) find the same run.
    same = default_run_id("lite/test.jsonl", config, lite)
    assert default_run_id("renamed/test.jsonl", config, lite[::-1]) == same
    assert default_run_id("lite/test.jsonl", config, tasks("a", "b", statement="other")) == same
    assert same.startswith("test-") and default_run_id("x/lite.jsonl", config, lite).startswith("lite-")


def test_default_run_id_follows_the_settings_that_shape_the_rollouts_and_the_curves() -> None:
    suite = tasks("a")
    first = default_run_id("s.jsonl", load_config(n=2), suite)
    operational = load_config(n=8, concurrency=4, overrides=["verify.concurrency=5"])
    assert default_run_id("s.jsonl", operational, suite) == first
    for setting in ("model.seed=1", "early_stop=false", "budget=10", "verify.timeout_s=60", "agent.step_limit=3"):
        assert default_run_id("s.jsonl", load_config(overrides=[setting]), suite) != first, setting


@pytest.mark.parametrize(("setting", "named"), [
    ("early_stop=false", "early_stop: True -> False"),
    ("early_stop_fixed=2", "early_stop_fixed: 4 -> 2"),
    ("budget=10", "budget: None -> 10"),
    ("verify.timeout_s=60", "verify.timeout_s: 300.0 -> 60.0"),
    ("verify.flaky=strict", "verify.flaky: 'rerun' -> 'strict'"),
    ("verify.fail_to_pass_first=true", "verify.fail_to_pass_first: False -> True"),
])  # fmt: skip
def test_a_resume_that_changes_how_the_curves_sample_is_drawn_is_refused_by_name(
    tmp_path: Path, setting: str, named: str
) -> None:
    store = stored(tmp_path)
    with pytest.raises(ConfigError) as refused:
        check_resumable(store, load_config(overrides=[setting]))
    assert named in str(refused.value) and "another --run-id" in str(refused.value)
    # The hint puts the recorded value back, and that resumes.
    flags = str(refused.value).split("to resume it, pass ", 1)[1].split(";")[0].split()
    check_resumable(store, load_config(overrides=[setting, *[f for f in flags if f != "-c"]]))


def test_operational_settings_may_change_on_resume(tmp_path: Path) -> None:
    store = stored(tmp_path)
    check_resumable(store, load_config(n=8, concurrency=2, overrides=["verify.concurrency=7", "infra_retries=0"]))


def test_every_changed_setting_is_named_with_both_values(tmp_path: Path) -> None:
    store = stored(tmp_path, "budget=10", "budget_first=2")
    with pytest.raises(ConfigError) as refused:
        check_resumable(store, load_config(overrides=["budget=20", "verify.flaky_runs=5", "agent.step_limit=3"]))
    message = str(refused.value)
    for part in ("budget: 10 -> 20", "budget_first: 2 -> None", "verify.flaky_runs: 3 -> 5",
                 "agent.step_limit: 20 -> 3"):  # fmt: skip
        assert part in message, part


def test_a_run_recorded_by_an_older_version_resumes_with_its_missing_settings_at_their_defaults(tmp_path: Path) -> None:
    store = stored(tmp_path)
    old = store.config_data()
    for section, key in (("verify", "fail_to_pass_first"), ("verify", "flaky"), ("agent", "context_lines")):
        del old[section][key]  # settings that version did not have
    del old["budget_first"]
    old["agent"]["retired_setting"] = 1  # one this version no longer has
    (store.path / "config.yaml").write_text(yaml.safe_dump(old))
    check_resumable(store, load_config())
    with pytest.raises(ConfigError, match="verify.flaky: 'rerun' -> 'exclude'"):
        check_resumable(store, load_config(overrides=["verify.flaky=exclude"]))


def older_default_run_id(suite: str, config: RunConfig) -> str:
    """The default run id of agentbon before the suite's tasks were part of it (its code, as it was)."""
    keys = ("model.name", "model.temperature", "model.top_p", "model.top_k", "model.max_tokens", "model.seed", "agent")
    data = config.model_dump(mode="json")
    del data["agent"]["prompts_digest"]  # a field that agentbon did not have then

    def pick(dotted: str) -> object:
        value: object = data
        for part in dotted.split("."):
            value = value.get(part, {}) if isinstance(value, dict) else {}
        return value

    digest = hashlib.sha256(json.dumps([pick(k) for k in keys], sort_keys=True).encode()).hexdigest()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{Path(suite).stem}-{config.model.name}").strip("-")
    return f"{name}-{digest[:8]}"


def test_the_same_command_finds_an_older_versions_run_while_it_holds_exactly_the_suite(tmp_path: Path) -> None:
    config = load_config(overrides=[f"run_dir={tmp_path}", "model.name=m"])
    suite = tasks("a", "b")
    new = default_run_id("lite/test.jsonl", config, suite)
    old = older_default_run_id("lite/test.jsonl", config)
    assert new != old and resolve_run_id("lite/test.jsonl", config, suite) == new  # no older run: the new name
    # What an older version wrote: the config and the tasks, no record of the task set.
    (tmp_path / old).mkdir()
    (tmp_path / old / "config.yaml").write_text(yaml.safe_dump(config.model_dump(mode="json")))
    (tmp_path / old / "tasks.jsonl").write_text("".join(t.model_dump_json() + "\n" for t in suite))
    assert resolve_run_id("lite/test.jsonl", config, suite[::-1]) == old
    assert resolve_run_id("verified/test.jsonl", config, tasks("a", "b", "c")) != old  # another suite, same stem
    assert resolve_run_id("lite/test.jsonl", config, tasks("a")) != old  # a run that holds more than the suite
    explicit = config.model_copy(update={"run_id": "mine"})
    assert resolve_run_id("lite/test.jsonl", explicit, suite) == "mine"
    RunStore(tmp_path / new).create(config.model_dump(mode="json"), suite)
    assert resolve_run_id("lite/test.jsonl", config, suite) == new  # once the new one exists, it is the one


def test_a_resume_without_some_tasks_leaves_them_out_and_one_with_them_brings_them_back(tmp_path: Path) -> None:
    store = stored(tmp_path, ids=("a", "b", "c"))
    config = load_config()
    changes = check_task_changes(store, tasks("a", "b"), config)
    assert (changes.dropped, changes.added, changes.redefined) == (["c"], [], {})
    store.create(config.model_dump(mode="json"), tasks("a", "b"))
    assert [t.task_id for t in store.tasks()] == ["a", "b"] and len(store.definitions()) == 3
    back = check_task_changes(store, tasks("a", "b", "c", "d"), config)
    assert (back.dropped, back.added) == ([], ["c", "d"])


def test_a_redefined_task_is_refused_unless_accepted(tmp_path: Path) -> None:
    store = stored(tmp_path, ids=("a", "b"))
    with pytest.raises(ConfigError, match=r"a: problem_statement.*--accept-task-changes"):
        check_task_changes(store, tasks("a", statement="else") + tasks("b"), load_config())
    accepted = check_task_changes(store, tasks("a", statement="else"), load_config(accept_task_changes=True))
    assert (accepted.redefined, accepted.dropped) == ({"a": ["problem_statement"]}, ["b"])


def test_under_a_budget_another_task_set_is_refused(tmp_path: Path) -> None:
    store = stored(tmp_path, "budget=10", ids=("a", "b"))
    budget = load_config(overrides=["budget=10"])
    with pytest.raises(ConfigError, match=r"budget.*dropped: b"):
        check_task_changes(store, tasks("a"), budget)
    with pytest.raises(ConfigError, match=r"budget.*added: c"):
        check_task_changes(store, tasks("a", "b", "c"), budget.model_copy(update={"accept_task_changes": True}))
    assert check_task_changes(store, tasks("b", "a"), budget).dropped == []
