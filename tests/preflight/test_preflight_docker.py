"""Checks against the real Docker engine: reachable, its networks, its images, its CPUs, its data root's space."""

from __future__ import annotations

import uuid

import pytest

from agentbon.config import RunConfig
from agentbon.orchestrate.factories import Factories
from agentbon.preflight import Context, preflight
from agentbon.preflight.disk import check_disk
from agentbon.preflight.engine import check_engine, check_limits, check_network
from agentbon.preflight.images import check_images
from agentbon.testing import FakeBackend
from tests.preflight.pf_support import make_task


def _ctx(tasks=(), **config) -> Context:
    return Context(RunConfig.model_validate(config), list(tasks))


def test_an_unreachable_engine_names_the_address_and_how_to_start_one(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    ctx = _ctx()
    [problem] = check_engine(ctx)
    assert problem.fatal and "no-docker.sock does not answer" in problem.cause
    assert ".ci/setup-docker.sh" in problem.fix and "sandbox.backend=process" in problem.fix
    # the other engine checks leave it to that one problem
    assert check_network(ctx) == check_images(ctx) == check_limits(ctx) == []


def test_no_engine_is_needed_for_the_process_backend_or_a_fake_one(monkeypatch, tmp_path):
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    assert check_engine(_ctx(sandbox={"backend": "process"})) == []
    assert check_engine(Context(RunConfig(), [], Factories(backend=FakeBackend))) == []


@pytest.mark.docker
def test_a_reachable_engine_passes(engine):
    assert check_engine(_ctx()) == []


@pytest.mark.docker
def test_a_misspelt_network_fails_listing_the_engines_networks(engine):
    [problem] = check_network(_ctx(sandbox={"network": "bridgee"}))
    assert problem.fatal
    assert problem.cause.startswith("sandbox.network=bridgee: no such network; networks the engine has: ")
    assert "bridge" in problem.cause and "none" in problem.cause
    assert "docker network create bridgee" in problem.fix


@pytest.mark.docker
@pytest.mark.parametrize("mode", ["none", "bridge", "host"])
def test_the_builtin_modes_pass(engine, mode):
    assert check_network(_ctx(sandbox={"network": mode})) == []


@pytest.mark.docker
def test_a_user_defined_network_passes_once_created(engine):
    name = f"agentbon-preflight-{uuid.uuid4().hex[:8]}"
    assert len(check_network(_ctx(sandbox={"network": name}))) == 1
    network = engine.networks.create(name)
    try:
        assert check_network(_ctx(sandbox={"network": name})) == []
    finally:
        network.remove()


@pytest.mark.docker
def test_a_container_network_needs_the_container(engine):
    [problem] = check_network(_ctx(sandbox={"network": "container:agentbon-no-such-container"}))
    assert "no such container" in problem.cause


@pytest.mark.docker
def test_more_cpus_than_the_engine_has_are_refused(engine):
    cpus = engine.info()["NCPU"]
    [problem] = check_limits(_ctx(sandbox={"cpus": cpus + 1}))
    assert f"the engine has {cpus} CPU(s)" in problem.cause and f"sandbox.cpus={cpus}" in problem.fix
    assert check_limits(_ctx(sandbox={"cpus": 1})) == []


@pytest.mark.docker
def test_a_missing_prebuilt_image_is_named_with_the_command_that_gets_it(engine):
    image = f"agentbon-preflight/missing:{uuid.uuid4().hex[:8]}"
    problems = check_images(_ctx([make_task("a", image), make_task("b", image)]))
    [problem] = [p for p in problems if image in p.cause]
    assert "tasks a, b" in problem.cause and f"docker pull {image}" in problem.fix
    # No registry here; where one answers it does not have this random image either: fatal both ways.
    assert problem.fatal and "agentbon sandbox build" in problem.fix


@pytest.mark.docker
def test_a_present_prebuilt_image_passes(engine):
    tags = [tag for image in engine.images.list() for tag in image.tags]
    if not tags:
        pytest.skip("the engine has no tagged image")
    assert check_images(_ctx([make_task("a", tags[0])])) == []


@pytest.mark.docker
def test_a_missing_base_recipe_is_fatal(engine, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBON_SANDBOXES", str(tmp_path))
    [problem] = check_images(_ctx([make_task()]))
    assert problem.fatal and "base image recipe not found" in problem.cause and "AGENTBON_SANDBOXES" in problem.fix


@pytest.mark.docker
def test_the_base_image_is_present_or_buildable(engine):
    from agentbon.sandbox.base import base_tag

    present = any(base_tag() in image.tags for image in engine.images.list())
    problems = check_images(_ctx([make_task()]))
    assert (problems == []) == present
    assert all("agentbon sandbox base" in p.fix for p in problems)


@pytest.mark.docker
def test_the_docker_data_root_has_room(engine, tmp_path):
    assert check_disk(_ctx(run_dir=str(tmp_path))) == []


@pytest.mark.docker
def test_the_whole_preflight_with_one_client(engine, tmp_path):
    problems = preflight(RunConfig(run_dir=str(tmp_path), model={"endpoint": "http://127.0.0.1:9/v1"}), [make_task()])
    assert [p.check for p in problems if p.fatal] == ["endpoint"]
