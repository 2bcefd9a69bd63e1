"""swebench 5.x task repositories (``sweb.yaml`` and ``tasks/<instance_id>/``) as suites, and their images.

Loading goes through the harness's own reader and checks: a task folder they turn down is an error naming the
folder, and the rest loads. On real Docker, the pytest family's instance image is built from the task
repository's Dockerfile — the harness's image spec, with ``docker buildx`` where it works and the engine's
classic builder where it does not (this machine's docker.io has no buildx) — under the name the instance
carries; the gold patch then resolves in it and the wrong one does not.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.config import VerifyConfig
from agentbon.evaluate.images import Getter, needs
from agentbon.swebench import TASK_REPO_KEY, instance_image
from agentbon.tasks import load_suite
from agentbon.types import Rollout
from agentbon.verify import TestVerifier
from tests.swebench.families import CONDA_SETUP, Built
from tests.swebench.support import harness_or_skip

pytestmark = pytest.mark.usefixtures("harness")
DATASET = "acme/fixtures"


@pytest.fixture
def harness():
    harness_or_skip()
    pytest.importorskip("swebench.task.repo", reason="swebench 5.x reads task repositories")


def dockerfile(base_image: str, made: Built) -> str:
    """An instance image's layout on agentbon's base image: the repository at /testbed, the testbed env."""
    setup = "\n".join(f"RUN {command}" for command in CONDA_SETUP)
    return (
        f"FROM {base_image}\n"
        "COPY repo.bundle /tmp/repo.bundle\n"
        f"RUN git clone -q /tmp/repo.bundle /testbed && git -C /testbed checkout -q {made.base_commit}"
        " && rm /tmp/repo.bundle\n"
        f"{setup}\nWORKDIR /testbed\n"
    )


def add_task(root: Path, made: Built, mirror: Path, base_image: str, split: str = "test", **drop: bool) -> Path:
    """Write ``made`` as a task folder the way swebench 5.x lays one out (``swebench.task.repo``)."""
    record = made.record
    folder = root / "tasks" / record["instance_id"]
    folder.mkdir(parents=True)
    meta = {key: record[key] for key in ("instance_id", "repo", "version", "base_commit", "log_parser", "eval_type")}
    meta.update(split=split, datasets=[DATASET], image=instance_image(record["instance_id"]))
    (folder / "task.yaml").write_text(yaml.safe_dump(meta))
    tests = {"FAIL_TO_PASS": json.loads(record["FAIL_TO_PASS"]), "PASS_TO_PASS": json.loads(record["PASS_TO_PASS"])}
    (folder / "tests.json").write_text(json.dumps(tests))
    files = {
        "gold.patch": record["patch"], "test.patch": record["test_patch"], "eval.sh": record["eval_script"],
        "problem_statement.md": record["problem_statement"], "Dockerfile": dockerfile(base_image, made),
    }  # fmt: skip
    for name, text in files.items():
        if not drop.get(name.replace(".", "_")):
            (folder / name).write_text(text)
    repo = mirror / record["repo"]
    subprocess.run(["git", "-C", str(repo), "bundle", "create", str(folder / "repo.bundle"), "--all"], check=True)
    return folder


def new_repo(root: Path) -> Path:
    root.mkdir()
    (root / "sweb.yaml").write_text(yaml.safe_dump({"datasets": [DATASET], "splits": ["test"]}))
    return root


def renamed(made: Built, instance_id: str) -> Built:
    return Built(
        made.family,
        made.base_commit,
        made.test_patch,
        made.gold,
        made.wrong,
        {**made.record, "instance_id": instance_id},
    )


def test_a_task_repository_loads_as_a_suite_through_the_harnesss_reader(built, mirror, tmp_path):
    made = built("pytest")
    root = new_repo(tmp_path / "task-repo")
    add_task(root, made, mirror, "agentbon/base:unused")
    add_task(root, renamed(made, "acme__calc-broken"), mirror, "agentbon/base:unused", eval_sh=True)
    add_task(root, renamed(made, "acme__calc-old"), mirror, "agentbon/base:unused", split="deprecated")

    tasks, errors = load_suite(root)

    [task] = tasks
    assert task.task_id == made.record["instance_id"] and task.kind == "swebench"
    assert task.environment.image == instance_image(task.task_id) and task.environment.workdir == "/testbed"
    assert task.grade.runner == "swebench" and task.grade.log_parser == made.record["log_parser"]
    assert task.grade.fail_to_pass == made.family.fail_to_pass and task.gold_patch == made.gold
    assert task.metadata[TASK_REPO_KEY] == str(root.resolve()) and task.metadata["version"] == "1.0"
    assert sorted(task.evidence.pass_to_pass) == sorted(made.family.evidence)
    # the broken folder is an error naming it and what the harness's checks found; the deprecated one is skipped
    [error] = errors
    assert error.source == str(root / "tasks" / "acme__calc-broken" / "task.yaml")
    assert "missing eval.sh" in error.problem


def test_a_task_repository_that_publishes_nothing_is_one_error_naming_its_config(tmp_path):
    root = tmp_path / "task-repo"
    (root / "tasks").mkdir(parents=True)
    (root / "sweb.yaml").write_text("splits: [test]\n")
    tasks, errors = load_suite(root)
    assert tasks == [] and len(errors) == 1
    assert errors[0].source.endswith("sweb.yaml") and "does not name any datasets" in errors[0].problem


def test_test_assets_the_harness_would_stage_are_refused_not_silently_dropped(built, mirror, tmp_path):
    root = new_repo(tmp_path / "task-repo")
    folder = add_task(root, built("pytest"), mirror, "agentbon/base:unused")
    (folder / "test_assets" / "img").mkdir(parents=True)
    (folder / "test_assets" / "img" / "a.png").write_bytes(b"\x89PNG")
    tasks, [error] = load_suite(root)
    assert tasks == [] and error.field == "test_assets" and "does not" in error.problem


@pytest.mark.docker
def test_the_instance_image_is_built_from_the_task_repository_and_the_gold_patch_resolves_in_it(
    built, mirror, backend, tmp_path
):
    from agentbon.sandbox import ensure_base_image

    client = backend.client
    made = built("pytest")
    root = new_repo(tmp_path / "task-repo")
    add_task(root, renamed(made, "acme__calc-taskrepo-1"), mirror, ensure_base_image(client))
    (task,), errors = load_suite(root)
    assert errors == []
    [need] = needs([task])
    local = f"sweb.eval.x86_64.{task.task_id}:latest"
    # a JSONL of the same instance (image named, no environment) builds through --task-repo
    record = {**made.record, "instance_id": task.task_id, "image": task.environment.image}
    del record["environment"]
    suite = tmp_path / "instances.jsonl"
    suite.write_text(json.dumps(record) + "\n")
    try:
        result = CliRunner().invoke(app, ["sandbox", "build", str(suite), "--task-repo", str(root)])
        assert result.exit_code == 0, result.output
        assert f"{task.environment.image}\tbuilt" in result.output and "1 built" in result.output, result.output
        assert client.images.get(task.environment.image).id == client.images.get(local).id
        verifier = TestVerifier(backend, VerifyConfig(timeout_s=120, dedupe=False), labels={"stage": "swebench-test"})
        for index, (patch, expected) in enumerate(((made.gold, "pass"), (made.wrong, "fail"), ("", "fail"))):
            rollout = Rollout(run_id="r", task_id=task.task_id, index=index, status="submitted", patch=patch)
            verdict = verifier.verify(task, rollout, "grade")
            assert verdict.status == expected, f"{verdict.reason}\n{verdict.log}"
        # the task repository as the suite: found in the engine now
        got = Getter(client, root).get(need)
        assert got.outcome == "ready", got.how
    finally:
        for ref in (task.environment.image, local):
            try:
                client.images.remove(ref, force=True)
            except Exception:  # noqa: BLE001 - already gone
                pass


@pytest.mark.docker
def test_a_task_repository_whose_dockerfile_fails_is_missing_with_the_step_that_failed(
    built, mirror, backend, tmp_path
):
    from agentbon.sandbox import ensure_base_image

    made = renamed(built("pytest"), "acme__calc-taskrepo-2")
    root = new_repo(tmp_path / "task-repo")
    folder = add_task(root, made, mirror, ensure_base_image(backend.client))
    (folder / "Dockerfile").write_text(dockerfile(ensure_base_image(backend.client), made) + "RUN exit 7\n")
    (task,), _ = load_suite(root)
    got = Getter(backend.client, root).get(needs([task])[0])
    assert got.outcome == "missing" and "failed" in got.how, got.how
    assert "exit 7" in got.how or "returned a non-zero code: 7" in got.how, got.how
