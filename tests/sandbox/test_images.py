"""Base and task images against the real engine: content-hash cache, setup, dependencies, failures, prebuilt images."""

from __future__ import annotations

import ssl
import time

import httpx
import pytest
from sbx_repo import make_task

from agentbon.errors import ImageBuildError
from agentbon.sandbox import DockerBackend, ensure_base_image
from agentbon.sandbox.base import HOST_CA_BUNDLE, base_tag
from agentbon.sandbox.images import task_image

pytestmark = pytest.mark.docker


def test_base_image_is_tagged_by_its_recipe_and_reused(engine):
    tag = ensure_base_image(engine)
    assert tag == base_tag() and tag.startswith("agentbon/base:")
    started = time.monotonic()
    assert ensure_base_image(engine) == tag
    print(f"base image cache hit: {time.monotonic() - started:.3f}s")


def test_base_command_reports_the_cached_image(engine):
    from typer.testing import CliRunner

    from agentbon.cli import app

    ensure_base_image(engine)
    result = CliRunner().invoke(app, ["sandbox", "base"])
    assert result.exit_code == 0 and f"{base_tag()} (cached" in result.output


def test_second_prepare_is_a_cache_hit(engine, sandbox_config, tiny_task):
    first = DockerBackend(sandbox_config, engine).image_for(tiny_task)
    image_id = engine.images.get(first.ref).id
    started = time.monotonic()
    again = DockerBackend(sandbox_config, engine).image_for(tiny_task)  # a new backend: no in-process memo
    elapsed = time.monotonic() - started
    print(f"task image cache hit: {elapsed:.3f}s")
    assert again.ref == first.ref and not again.built
    assert engine.images.get(again.ref).id == image_id  # nothing was rebuilt
    assert again.base_commit == tiny_task.repo.base_commit


def test_the_cache_key_follows_the_environment(engine, sandbox_config, tiny_repo, run_labels):
    backend = DockerBackend(sandbox_config, engine)
    task = make_task(tiny_repo, "tiny-setup", setup=["echo prepared > /opt/marker", "git status --porcelain > /opt/st"])
    image = backend.image_for(task)
    plain = backend.image_for(make_task(tiny_repo, "tiny-setup"))
    assert image.ref != plain.ref and image.ref.startswith("agentbon/task:tiny-setup-")
    with backend.open(task, run_labels) as box:
        assert box.exec("cat /opt/marker /opt/st").output == "prepared\n"
        assert box.exec("test -e /tmp/agentbon-build").exit_code == 1  # the build files (and CA) are gone


def test_tracked_files_the_build_rewrites_go_back_to_the_base(engine, sandbox_config, tiny_repo, run_labels):
    # As `pip install -e .` rewrites an sdist's committed egg-info: the candidates' diffs must not carry it.
    backend = DockerBackend(sandbox_config, engine)
    task = make_task(tiny_repo, "tiny-rewrite", setup=["echo regenerated >> README.md", "echo new > built.txt"])
    with backend.open(task, run_labels) as box:
        assert box.diff() == ""  # neither the rewritten file nor what the build added
        assert box.exec("git status --porcelain").output == ""
        assert box.exec("cat built.txt").output == "new\n"  # what the build added stays
        box.exec("echo mine > agent.txt && echo more >> README.md")
        assert "agent.txt" in box.diff() and "+more" in box.diff()  # the agent's own changes still count


def test_the_tasks_variables_reach_set_up_agent_and_prebuilt_images(engine, sandbox_config, tiny_repo, run_labels):
    env = {"PYTHONPATH": "src", "ACME_MODE": "it's $HOME"}  # literal: no quoting or expansion on the way
    task = make_task(tiny_repo, "tiny-env", env=env, setup=['printf "%s|%s" "$PYTHONPATH" "$ACME_MODE" > /opt/seen'])
    backend = DockerBackend(sandbox_config, engine)
    image = backend.image_for(task)
    assert image.env == tuple(sorted(env.items()))
    with backend.open(task, run_labels) as box:
        assert box.exec("cat /opt/seen").output == "src|it's $HOME"
        assert box.exec('printf "%s|%s" "$PYTHONPATH" "$ACME_MODE"').output == "src|it's $HOME"
        assert box.exec("python3 -c 'import sys; print(sys.path[1])'").output.strip() == f"{box.workdir}/src"
    prebuilt = make_task(tiny_repo, "tiny-env-prebuilt", image=image.ref, env={"ACME_MODE": "prebuilt"})
    with backend.open(prebuilt, run_labels) as box:
        assert box.exec('printf "%s" "$ACME_MODE"').output == "prebuilt"
    with backend.open(make_task(tiny_repo, "tiny-env-none"), run_labels) as box:
        assert box.exec('printf "%s" "${ACME_MODE-unset}"').output == "unset"


def test_failing_setup_is_an_image_build_error(engine, sandbox_config, tiny_repo):
    task = make_task(tiny_repo, "tiny-broken", setup=["echo about to fail", "exit 3"])
    with pytest.raises(ImageBuildError, match="(?s)tiny-broken.*returned a non-zero code: 3.*about to fail"):
        DockerBackend(sandbox_config, engine).prepare(task)


def _ssl_context() -> ssl.SSLContext:
    bundle = HOST_CA_BUNDLE if HOST_CA_BUNDLE.is_file() else None
    return ssl.create_default_context(cafile=str(bundle) if bundle else None)


def _pypi_reachable() -> bool:
    try:
        return httpx.get("https://pypi.org/simple/six/", timeout=5, verify=_ssl_context()).is_success
    except (httpx.HTTPError, OSError):
        return False


def test_python_packages_install_through_the_hosts_ca(engine, sandbox_config, tiny_repo, run_labels):
    if not _pypi_reachable():
        pytest.skip("PyPI is not reachable from this machine")
    task = make_task(tiny_repo, "tiny-deps", python_packages=["six==1.17.0"])
    backend = DockerBackend(sandbox_config, engine)
    with backend.open(task, run_labels) as box:
        assert box.exec("python3 -c 'import six; print(six.__version__)'").output == "1.17.0\n"
        assert box.exec("test -e /tmp/agentbon-build").exit_code == 1


def test_prebuilt_image_is_used_as_is(engine, sandbox_config, tiny_task, run_labels):
    built = task_image(engine, tiny_task)
    prebuilt = tiny_task.model_copy(
        update={
            "task_id": "tiny-prebuilt",
            "environment": tiny_task.environment.model_copy(update={"image": built.ref}),
        }
    )
    image = task_image(engine, prebuilt)
    assert (image.ref, image.built) == (built.ref, False)
    with DockerBackend(sandbox_config, engine).open(prebuilt, run_labels) as box:
        assert box.exec("git rev-parse HEAD").output.strip() == tiny_task.repo.base_commit


def test_missing_prebuilt_image_is_an_image_build_error(engine, tiny_task, monkeypatch):
    monkeypatch.setattr("agentbon.sandbox.images.registry_reachable", lambda client: False)
    missing = tiny_task.model_copy(
        update={"environment": tiny_task.environment.model_copy(update={"image": "agentbon/none:missing"})}
    )
    with pytest.raises(ImageBuildError, match="agentbon/none:missing.*not in the engine"):
        task_image(engine, missing)


def test_backend_ships_to_workers_without_its_client(engine, sandbox_config, tiny_task):
    import pickle

    backend = DockerBackend(sandbox_config, engine)
    ref = backend.prepare(tiny_task)
    copy = pickle.loads(pickle.dumps(backend))  # as Ray ships it to a worker
    assert copy._client is None and copy.prepare(tiny_task) == ref  # memo travels, the client reconnects
    assert copy.client.ping()
