"""The endpoint check against a real HTTP server on loopback: nothing there, a wrong model name, a refused key."""

from __future__ import annotations

from agentbon.config import RunConfig
from agentbon.orchestrate.factories import Factories
from agentbon.preflight import Context
from agentbon.preflight.model import check_endpoint
from agentbon.testing import planned_model
from tests.preflight.pf_support import ModelServer


def _config(endpoint: str, name: str = "served-model", **model) -> RunConfig:
    return RunConfig(model={"endpoint": endpoint, "name": name, **model})


def test_an_endpoint_that_serves_the_model_passes(model_server):
    assert check_endpoint(Context(_config(model_server.endpoint), [])) == []


def test_nothing_listening_is_a_problem_that_says_so(closed_port):
    endpoint = f"http://127.0.0.1:{closed_port}/v1"
    [problem] = check_endpoint(Context(_config(endpoint), []))
    assert problem.fatal and problem.check == "endpoint"
    assert endpoint in problem.cause and "does not answer" in problem.cause
    assert "model.endpoint" in problem.fix


def test_a_wrong_model_name_names_the_served_models(model_server):
    [problem] = check_endpoint(Context(_config(model_server.endpoint, name="qwen-typo"), []))
    assert problem.fatal and "qwen-typo" in problem.cause and "served-model" in problem.cause
    assert "model.name" in problem.fix


def test_a_refused_api_key_is_a_problem():
    with ModelServer(["served-model"], key="right") as server:
        assert check_endpoint(Context(_config(server.endpoint, api_key="right"), [])) == []
        [problem] = check_endpoint(Context(_config(server.endpoint, api_key="wrong"), []))
    assert problem.fatal and "401" in problem.cause


def test_a_fake_model_needs_no_endpoint(closed_port):
    fake = Factories(model=planned_model)
    assert check_endpoint(Context(_config(f"http://127.0.0.1:{closed_port}/v1"), [], fake)) == []


def test_each_of_several_endpoints_is_probed_and_a_problem_names_its_url(model_server, closed_port):
    down = f"http://127.0.0.1:{closed_port}/v1"
    config = RunConfig(model={"endpoints": [model_server.endpoint, down], "name": "served-model"})
    [problem] = check_endpoint(Context(config, []))
    assert problem.fatal and problem.check == "endpoint"
    assert down in problem.cause and model_server.endpoint not in problem.cause
    assert "model.endpoints does not answer" in problem.cause and down in problem.fix


def test_a_wrong_model_name_on_several_endpoints_is_one_problem_each(model_server):
    with ModelServer(["served-model"]) as other:
        config = RunConfig(model={"endpoints": [model_server.endpoint, other.endpoint], "name": "qwen-typo"})
        problems = check_endpoint(Context(config, []))
    assert [other.endpoint in p.cause for p in problems] == [False, True]
    assert model_server.endpoint in problems[0].cause and all("model.endpoints" in p.fix for p in problems)
