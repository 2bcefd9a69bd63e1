"""A run's own prompt templates (``agent.prompts_dir``) are held by their content: checked at load, part of the run's
identity, carried to the workers with the run, and never replaced by the built-in prompts on a node that lacks
them (agent/templates.py, docs/architecture.md "No shared filesystem")."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentbon.agent import make_agent
from agentbon.agent.base import render
from agentbon.agent.templates import PROMPTS_ENV, PromptsUnavailable
from agentbon.config import load_config
from agentbon.errors import ConfigError
from agentbon.orchestrate.faults import classify
from agentbon.orchestrate.resume import check_resumable, default_run_id
from agentbon.store import RunStore
from agentbon.types import RepoSource, Task, TestSet

SYSTEM = "edit_system.j2"
BUILT_IN_START = "You are an expert software engineer."


def folder(root: Path, text: str = "Custom system prompt.") -> Path:
    root.mkdir(parents=True)
    (root / SYSTEM).write_text(text)
    return root


def task(task_id: str = "t") -> Task:
    repo = RepoSource(url="https://example.com/r.git", base_commit="a" * 40)
    return Task(task_id=task_id, problem_statement="p", repo=repo, grade=TestSet(command="true"))


def test_a_missing_prompts_folder_is_refused_at_load(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=rf"agent.prompts_dir: {tmp_path / 'nowhere'} is not a directory"):
        load_config(overrides=[f"agent.prompts_dir={tmp_path / 'nowhere'}"])


def test_a_folder_that_replaces_none_of_the_agents_prompts_is_refused_at_load(tmp_path: Path) -> None:
    bash_only = tmp_path / "p"
    bash_only.mkdir()
    (bash_only / "bash_system.j2").write_text("x")
    with pytest.raises(ConfigError, match=r"agent.prompts_dir: .* no template named as a built-in prompt of the edit"):
        load_config(overrides=[f"agent.prompts_dir={bash_only}"])  # the edit agent (default) renders none of them
    assert load_config(overrides=[f"agent.prompts_dir={bash_only}", "agent.type=bash"]).agent.prompts_digest


def test_the_runs_identity_holds_the_templates_contents_not_their_path(tmp_path: Path) -> None:
    suite = [task()]
    one = load_config(overrides=[f"agent.prompts_dir={folder(tmp_path / 'a')}"])
    moved = load_config(overrides=[f"agent.prompts_dir={folder(tmp_path / 'b')}"])  # same contents elsewhere
    other = load_config(overrides=[f"agent.prompts_dir={folder(tmp_path / 'c', 'Another prompt.')}"])
    assert one.agent.prompts_digest == moved.agent.prompts_digest != other.agent.prompts_digest
    assert default_run_id("s.jsonl", one, suite) == default_run_id("s.jsonl", moved, suite)
    assert default_run_id("s.jsonl", one, suite) != default_run_id("s.jsonl", other, suite)
    assert default_run_id("s.jsonl", one, suite) != default_run_id("s.jsonl", load_config(), suite)
    store = RunStore(tmp_path / "runs" / "r")
    store.create(one.model_dump(mode="json"), suite)
    check_resumable(store, moved)  # the folder moved, the templates are the same: it resumes
    with pytest.raises(ConfigError) as refused:
        check_resumable(store, other)
    message = str(refused.value)
    assert f"agent.prompts_digest: {one.agent.prompts_digest!r} -> {other.agent.prompts_digest!r}" in message
    assert "give it the templates it was started with" in message and "-c agent.prompts_digest" not in message


def test_a_node_without_the_folder_fails_as_infrastructure_instead_of_using_the_built_in_prompts(
    tmp_path: Path,
) -> None:
    config = load_config(overrides=[f"agent.prompts_dir={folder(tmp_path / 'gone')}"]).agent
    shutil.rmtree(tmp_path / "gone")  # as on a node that does not share the driver's disk
    with pytest.raises(PromptsUnavailable, match="cannot read the run's prompt templates") as failed:
        make_agent(config)
    # Built beside the model client: retried and never counted as the model's failure.
    assert classify(failed.value, place="model").infra


def test_templates_changed_under_the_run_are_refused_on_the_worker(tmp_path: Path) -> None:
    config = load_config(overrides=[f"agent.prompts_dir={folder(tmp_path / 'p')}"]).agent
    (tmp_path / "p" / SYSTEM).write_text("Edited while the run was going.")
    with pytest.raises(
        PromptsUnavailable, match=rf"not the ones the run recorded \(agent.prompts_digest {config.prompts_digest}\)"
    ):
        render(config, SYSTEM)


def test_the_worker_renders_the_runs_templates_and_the_built_in_ones_it_does_not_replace(tmp_path: Path) -> None:
    config = load_config(overrides=[f"agent.prompts_dir={folder(tmp_path / 'p')}"]).agent
    assert render(config, SYSTEM) == "Custom system prompt.\n"
    assert render(load_config().agent, SYSTEM).startswith(BUILT_IN_START)


@pytest.mark.ray
def test_a_parcel_carries_the_templates_and_the_agent_renders_that_copy_where_the_folder_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ray_session
) -> None:
    from agentbon.orchestrate.shipping import pack, unpack

    monkeypatch.setenv("AGENTBON_CACHE", str(tmp_path / "cache"))
    for name in ("AGENTBON_VERIFIERS", "AGENTBON_SANDBOXES", PROMPTS_ENV):  # unpack sets them: restored after
        monkeypatch.setenv(name, "")
    config = load_config(overrides=[f"agent.prompts_dir={folder(tmp_path / 'shipped', 'Carried prompt.')}"]).agent
    parcels, _ = pack([task()], config)
    shutil.rmtree(tmp_path / "shipped")  # the driver's folder is not on this node
    unpack(parcels["t"])
    assert render(config, SYSTEM) == "Carried prompt.\n"
    (tmp_path / "shipped").mkdir()
    (tmp_path / "shipped" / SYSTEM).write_text("Changed after the run loaded its config.")
    with pytest.raises(ConfigError, match="changed since the run's config was loaded"):
        pack([task()], config)
