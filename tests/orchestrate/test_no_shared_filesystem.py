"""No shared filesystem: a two-node Ray cluster on this machine runs a suite whose folder is deleted once the run
has carried what the workers need through Ray, before any unit starts. Every rollout completes and grades as on
one node (the gold fix passes, no fix fails), the task images are built from the carried repositories, and both
nodes landed the carried verifier scripts in their own caches. Real Docker, bash agent and verifier; the model is
scripted. See tests/orchestrate/two_node_ship.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentbon.orchestrate.shipping import Parcel, digest, driver_files, unpack
from agentbon.types import RepoSource, Task, TestSet

pytestmark = [pytest.mark.ray, pytest.mark.docker]


def test_a_cluster_runs_a_suite_whose_folder_is_gone_before_the_rollouts_start(tmp_path: Path) -> None:
    from agentbon.sandbox import docker_client

    try:
        docker_client(timeout=10)
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no Docker engine: {e}")
    script = Path(__file__).parent / "two_node_ship.py"
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=1800,
        env={**os.environ, "RAY_AUTH_MODE": "disabled", "PYTHONPATH": f"{root}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert not out["suite_exists"] and not out["interrupted"]
    assert out["shipped_at"] >= 0 and (out["first_started"] == -1 or out["shipped_at"] < out["first_started"])
    [shipped] = out["shipped"]
    assert shipped["repos"] == 2 and shipped["repo_bytes"] > 0 and shipped["tasks"] == 2
    assert out["errors"] == {} and out["infra"] == [], (out["errors"], out["infra"])
    assert set(out["statuses"].values()) == {"submitted"} and len(out["statuses"]) == 8
    grade = out["grade"]
    assert all(grade[f"demo-migrate-dateparse/{i}"] == "pass" for i in range(4)), grade
    assert all(grade[f"demo-b-paginate/{i}"] == "fail" for i in range(4)), grade
    for node, landed in out["landed"].items():
        assert landed["verifiers"], f"the {node} node ran no unit with the carried verifier scripts: {out['landed']}"
    assert {name for landed in out["landed"].values() for name in landed["repos"]}, out["landed"]


def test_a_parcel_lands_once_per_node_and_points_the_task_at_its_copies(tmp_path, monkeypatch, ray_session):
    """What a worker does with a parcel, in this process: the bundle and files land under the node's cache, the
    task's repo.url points at the landed bundle, and the verifier scripts are found there."""
    import ray

    from agentbon.testing import init_repo
    from agentbon.verify import verifiers_dir

    monkeypatch.setenv("AGENTBON_CACHE", str(tmp_path / "cache"))
    for name in ("AGENTBON_VERIFIERS", "AGENTBON_SANDBOXES"):  # unpack sets them: restored after the test
        monkeypatch.setenv(name, "")
    sha = init_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    task = Task(
        task_id="t", problem_statement="p", repo=RepoSource(url=str(tmp_path / "repo"), base_commit=sha),
        grade=TestSet(command="true"),
    )  # fmt: skip
    from agentbon.orchestrate.shipping import pack

    parcels, manifest = pack([task, task.model_copy(update={"task_id": "u"})])
    assert manifest.repos == 1 and manifest.tasks == 2  # one bundle for the two tasks of one repository
    landed = unpack(parcels["t"])
    bundle = Path(landed.repo.url)
    assert bundle.parent == tmp_path / "cache" / "shipped" / "repos" and bundle.suffix == ".bundle"
    assert landed.repo.base_commit == sha and landed.model_copy(update={"repo": task.repo}) == task
    assert verifiers_dir() == tmp_path / "cache" / "shipped" / "files" / digest(driver_files()) / "verifiers"
    mtime = bundle.stat().st_mtime_ns
    assert unpack(parcels["u"]).repo.url == str(bundle) and bundle.stat().st_mtime_ns == mtime  # landed once
    from agentbon.sandbox.repo import prepare_repo

    assert prepare_repo(landed.repo.url, sha, tmp_path / "clone") == sha  # the landed bundle is a usable source
    assert unpack(task) is task  # a plain task (local Ray) passes through
    assert isinstance(parcels["t"], Parcel) and ray.is_initialized()


def test_only_local_repositories_are_carried(tmp_path, monkeypatch, ray_session):
    """A task with a prebuilt image (its image has the repository) and one whose repository is a URL (each node
    clones it into its own mirror) carry the scripts and the recipe only; a ``repo.bundle`` travels as is."""
    from agentbon.orchestrate.shipping import pack
    from agentbon.testing import init_repo
    from agentbon.types import Environment

    monkeypatch.setenv("AGENTBON_CACHE", str(tmp_path / "cache"))
    for name in ("AGENTBON_VERIFIERS", "AGENTBON_SANDBOXES"):  # unpack sets them: restored after the test
        monkeypatch.setenv(name, "")
    sha = init_repo(tmp_path / "repo", {"a.py": "x = 1\n"})
    subprocess.run(["git", "-C", str(tmp_path / "repo"), "bundle", "create", str(tmp_path / "repo.bundle"), "--all"],
                   check=True, capture_output=True)  # fmt: skip

    def task(task_id: str, url: str, image: str | None = None) -> Task:
        return Task(task_id=task_id, problem_statement="p", repo=RepoSource(url=url, base_commit=sha),
                    environment=Environment(image=image), grade=TestSet(command="true"))  # fmt: skip

    parcels, manifest = pack([
        task("prebuilt", str(tmp_path / "repo"), image="swebench/sweb.eval.x86_64.x:latest"),
        task("remote", "https://git.example/acme/calc.git"),
        task("bundle", str(tmp_path / "repo.bundle")),
    ])  # fmt: skip
    assert parcels["prebuilt"].repo is None and parcels["remote"].repo is None
    assert manifest.repos == 1 and manifest.repo_bytes == (tmp_path / "repo.bundle").stat().st_size
    import ray

    assert ray.get(parcels["bundle"].repo) == (tmp_path / "repo.bundle").read_bytes()  # as is, not re-bundled
    assert unpack(parcels["remote"]).repo.url == "https://git.example/acme/calc.git"
