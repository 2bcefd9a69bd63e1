"""Images before rollouts: what a suite needs, `agentbon sandbox build`, and `run`/`eval` refusing to start."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from eval_support import patch, pred, write_jsonl
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.config import load_config
from agentbon.evaluate.images import HARNESS_BUILD, Getter, harness_build_command, needs
from agentbon.preflight import Context
from agentbon.preflight.images import check_images, suite_of
from agentbon.testing import init_repo
from agentbon.types import Environment, RepoSource, Task, TestSet


def task(task_id: str, image: str | None = None, kind: str = "bugfix", source: str = "") -> Task:
    return Task(
        task_id=task_id, kind=kind, problem_statement="p", repo=RepoSource(url="/nowhere", base_commit="HEAD"),
        environment=Environment(image=image), grade=TestSet(fail_to_pass=["t.py::t"]), source=source,
    )  # fmt: skip


def test_needs_groups_tasks_by_prebuilt_image_and_builds_the_rest_one_by_one() -> None:
    wanted = needs([task("a", "img:1"), task("b"), task("c", "img:1"), task("d", "img:2")])
    assert [(n.ref, [t.task_id for t in n.tasks], n.prebuilt) for n in wanted] == [
        ("img:1", ["a", "c"], True), ("task image of b", ["b"], False), ("img:2", ["d"], True),
    ]


def test_harness_build_names_the_suite_file_and_the_instances() -> None:
    command = harness_build_command("sets/verified.jsonl", ["x__y-1", "x__y-2"])
    assert command[1:5] == ["-m", HARNESS_BUILD, "--dataset_name", "sets/verified.jsonl"]
    assert command[command.index("--instance_ids") + 1 :][:2] == ["x__y-1", "x__y-2"]


def test_fixes_name_the_suite_the_tasks_came_from(tmp_path: Path) -> None:
    config = load_config()
    one = Context(config, [task("a", source="s/v.jsonl:3"), task("b", source="s/v.jsonl:4")])
    assert suite_of(one) == "s/v.jsonl"
    listed = Context(config, [task("a", source="s/v.json[0]")])
    assert suite_of(listed) == "s/v.json"
    folders = Context(config, [task("a", source="demo/a/task.yaml"), task("b", source="demo/b/task.yaml")])
    assert suite_of(folders) == "demo"
    assert suite_of(Context(config, [task("a", source="x.jsonl:1"), task("b", source="y.jsonl:1")])) == "SUITE"


def loadable(tmp_path: Path, t: Task) -> Task:
    """``t`` over a real repository (a suite file's tasks must load)."""
    repo = tmp_path / "repo"
    sha = init_repo(repo, {"README.md": "hello\n"}) if not repo.exists() else None
    if sha is None:
        import subprocess

        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    return t.model_copy(update={"repo": RepoSource(url=str(repo), base_commit=sha)})


def missing_image() -> str:
    return f"agentbon-test/missing-{uuid.uuid4().hex[:8]}:latest"


@pytest.mark.docker
def test_a_missing_image_that_cannot_be_got_is_fatal_and_names_sandbox_build(engine) -> None:
    image = missing_image()
    ctx = Context(load_config(), [task("a", image, source="v.jsonl:1"), task("b", image, source="v.jsonl:2")])
    ctx._cache["registry"] = False  # as on an air-gapped machine, whatever this one can reach
    [problem] = check_images(ctx)
    assert problem.fatal and image in problem.cause and "tasks a, b" in problem.cause
    assert "agentbon sandbox build v.jsonl" in problem.fix and f"docker pull {image}" in problem.fix


@pytest.mark.docker
def test_eval_refuses_to_start_with_a_missing_image_and_records_nothing(engine, tmp_path: Path) -> None:
    from agentbon.sandbox.base import registry_reachable

    if registry_reachable(engine):
        pytest.skip("a registry answers here: a missing image may be pulled at first use")
    image = missing_image()
    suite = tmp_path / "suite.jsonl"
    suite.write_text(loadable(tmp_path, task("a", image)).model_dump_json() + "\n")
    preds = write_jsonl(tmp_path / "p.jsonl", [pred("a", patch("FIX"))])
    argv = ["eval", str(suite), "--predictions", str(preds), "--run-dir", str(tmp_path / "runs")]
    result = CliRunner().invoke(app, argv, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "preflight failed" in result.output and image in result.output
    assert f"agentbon sandbox build {suite}" in result.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("events.jsonl"))


@pytest.mark.docker
def test_sandbox_build_reports_ready_and_missing_with_the_command_that_gets_it(engine, tmp_path: Path) -> None:
    tags = [tag for image in engine.images.list() for tag in image.tags]
    if not tags:
        pytest.skip("the engine has no tagged image")
    absent = missing_image()
    suite = tmp_path / "suite.jsonl"
    tasks = [loadable(tmp_path, task("ok", tags[0])), loadable(tmp_path, task("x__y-1", absent, kind="swebench"))]
    suite.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    getter = Getter(engine, suite)
    getter._registry = False
    got = {g.ref: g for g in (getter.get(n) for n in needs(tasks))}
    assert got[tags[0]].outcome == "ready"
    assert got[absent].outcome == "missing" and "x__y-1" in got[absent].how and "no registry answers" in got[absent].how
    result = CliRunner().invoke(app, ["sandbox", "build", str(suite)], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    lines = [line.split("\t") for line in result.output.splitlines() if "\t" in line]
    assert [(ln[0], ln[1]) for ln in lines] == [(tags[0], "ready"), (absent, "missing")]
    assert "1 ready, 0 pulled, 0 built, 1 missing" in result.output
    assert "x__y-1" in lines[1][3] and "swebench" in lines[1][3]  # the harness's build, with the instance
