"""``model.endpoints``: rollouts routed across several OpenAI-compatible servers (real HTTP fakes, a real router).

Without Ray: the config's checks, and a router in the caller's process. On the session's Ray (marker ray): the
driver's named router actor shared by worker processes, a task's calls kept on its home endpoint, a spill while
the home endpoint is at its cap, an endpoint taken out on a server failure and put back by the restart.
"""

from __future__ import annotations

import sys
import threading

import pytest

from agentbon.config import ModelConfig, RunConfig, load_config
from agentbon.errors import ConfigError, ServerFailure
from agentbon.models import make_model, resolve_model
from agentbon.models.endpoints import EndpointModels
from agentbon.models.router import Router
from agentbon.models.service import ModelService
from agentbon.orchestrate.cluster import sandbox_slots
from tests.models.fake_openai import FakeOpenAIServer, Reply, completion

TASKS = [f"task-{i}" for i in range(6)]


def msgs(text: str) -> list[dict]:
    return [{"role": "system", "content": "a long shared task prompt"}, {"role": "user", "content": text}]


def sent(server: FakeOpenAIServer) -> list[str]:
    """The user message of every request the server got (the tests send the task id, or a label, there)."""
    return [body["messages"][-1]["content"] for body in server.requests]


def home(task_id: str, endpoints: int = 2) -> int:
    """The endpoint the router homes ``task_id`` on (the router's own stable hash)."""
    return Router(endpoints, 1).home(task_id)


def task_homed_on(index: int) -> str:
    return next(f"t{i}" for i in range(100) if home(f"t{i}") == index)


def metrics(queries: float, hits: float) -> str:
    return f"vllm:prefix_cache_queries_total {queries}\nvllm:prefix_cache_hits_total {hits}\n"


# ------------------------------------------------------------------------------------------------ config


def test_one_endpoint_works_as_before_and_several_are_a_list():
    one = ModelConfig(endpoint="http://a:8000/v1")
    assert one.urls() == ["http://a:8000/v1"] and one.endpoints == []
    several = load_config(overrides=["model.endpoints=[http://a:8000/v1, http://b:8000/v1]"]).model
    assert several.urls() == ["http://a:8000/v1", "http://b:8000/v1"] and several.endpoint is None
    assert ModelConfig().urls() == []
    resolved = resolve_model(several)
    assert resolved.launcher == "auto" and resolved.top_p == 0.95  # served elsewhere: nothing to launch here
    assert sandbox_slots(RunConfig(model=several)) == 16  # batching servers


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ({"endpoint": "http://a/v1", "endpoints": ["http://b/v1", "http://c/v1"]}, "not both"),
        ({"endpoints": ["http://a/v1", "http://b/v1", "http://a/v1/"]}, "http://a/v1 given more than once"),
        ({"endpoints": ["http://a/v1", "a:8000"]}, "'a:8000' is not an http(s) URL"),
    ],
)
def test_bad_endpoints_are_config_errors_naming_the_field(model, says):
    with pytest.raises(ConfigError, match="model.endpoints: ") as caught:
        load_config(model=model)
    assert says in str(caught.value)


# ------------------------------------------------------------------------------------ a router in this process


def test_without_a_named_router_calls_route_in_this_process():
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        models = make_model(ModelConfig(endpoints=[a.url, b.url], name="fake"))
        assert isinstance(models, EndpointModels)
        for task in TASKS:
            model = models.model_for(task)
            model.chat(msgs(task))
            assert len(model.chat_n(msgs(task), 2)) == 2  # a server without n: the client fans out, one slot
        servers = [a, b]
        for task in TASKS:
            assert sent(servers[home(task)]).count(task) == 3 and task not in sent(servers[1 - home(task)])
        models.close()


# ------------------------------------------------------------------------------------ the run's router on Ray


@pytest.fixture
def two_servers():
    with FakeOpenAIServer() as a, FakeOpenAIServer() as b:
        yield a, b


def start(servers: list[FakeOpenAIServer], **model) -> tuple[ModelService, ModelConfig]:
    service = ModelService(ModelConfig(endpoints=[s.url for s in servers], name="fake", **model))
    return service, service.start()


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_worker_processes_keep_each_task_on_its_home_endpoint(two_servers):
    import ray

    assert {home(t) for t in TASKS} == {0, 1}  # the tasks spread over both endpoints
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests.*

    @ray.remote(num_cpus=0)
    def rollouts(config: ModelConfig, tasks: list[str]) -> list[str]:
        models = make_model(config)
        return [models.model_for(t).chat(msgs(t), seed=i).content for t in tasks for i in range(3)]

    service, config = start(list(two_servers))
    try:
        assert config.pool and config.pool.startswith("agentbon-endpoints-")
        ray.get([rollouts.remote(config, TASKS[:3]), rollouts.remote(config, TASKS[3:])])  # two processes
        for task in TASKS:
            assert sent(two_servers[home(task)]).count(task) == 3, task
            assert task not in sent(two_servers[1 - home(task)]), task
        stats = service.stats()
        assert (stats["home"], stats["spills"], stats["requests"]) == (18, 0, 18)
        assert stats["launcher"] is None and stats["endpoints"] == 2 and stats["metrics_endpoints"] == 0
    finally:
        service.stop()


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_a_call_spills_while_its_home_endpoint_is_at_its_cap(two_servers):
    import ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    task = task_homed_on(0)
    arrived, gate = threading.Event(), threading.Event()

    def held(index: int, body: dict) -> Reply:
        arrived.set()
        return Reply(body=completion(["slow"]), gate=gate if body["messages"][-1]["content"] == "slow" else None)

    homed, other = two_servers
    homed.script = held
    homed.get_routes["/metrics"] = metrics(100, 10)  # earlier traffic: not the run's
    service, config = start(list(two_servers), max_inflight=1)

    @ray.remote(num_cpus=0)
    def chat(config: ModelConfig, task: str, text: str) -> str:
        return make_model(config).model_for(task).chat(msgs(text)).content

    try:
        slow = chat.remote(config, task, "slow")  # another process holds the home endpoint's one slot
        assert arrived.wait(60), "the slow request never reached its home endpoint"
        model = make_model(config).model_for(task)
        model.chat(msgs("fast"))
        assert sent(other) == ["fast"] and sent(homed) == ["slow"]
        gate.set()
        assert ray.get(slow, timeout=60) == "slow"
        model.chat(msgs("after"))  # the slot is free again: home
        assert sent(homed) == ["slow", "after"]
        homed.get_routes["/metrics"] = metrics(300, 160)
        stats = service.stats()
        assert (stats["home"], stats["spills"], stats["dead_endpoints"]) == (2, 1, 0)
        assert (stats["prefix_cache_queries"], stats["prefix_cache_hits"], stats["prefix_cache_hit_rate"]) == (
            200, 150, 0.75,
        )  # fmt: skip
        assert stats["metrics_endpoints"] == 1  # the other one exports no /metrics
    finally:
        gate.set()
        service.stop()


@pytest.mark.ray
@pytest.mark.usefixtures("ray_session")
def test_a_failing_endpoint_is_taken_out_until_the_restart_finds_it_answering(two_servers):
    task = task_homed_on(0)
    broken, good = two_servers
    broken.script = lambda i, body: Reply(status=503, body={"error": {"message": "overloaded"}})
    service, config = start(list(two_servers), retries=0)
    try:
        model = make_model(config).model_for(task)
        with pytest.raises(ServerFailure, match=broken.url):
            model.chat(msgs("first"))
        model.chat(msgs("second"))  # the other endpoint took the task
        assert sent(good) == ["second"] and service.stats()["dead_endpoints"] == 1
        service.restart()  # what the driver does after a server failure: the endpoint answers probes again
        assert service.stats()["dead_endpoints"] == 0
        with pytest.raises(ServerFailure):
            model.chat(msgs("third"))  # back home; still failing, as the retry taxonomy decides
        assert sent(broken) == ["first", "third"]
    finally:
        service.stop()
        service.stop()  # safe twice
