"""ModelService's figures for the run record: vLLM's /metrics counters over the run, nothing where there are none."""

from __future__ import annotations

from agentbon.config import ModelConfig
from agentbon.models.llama_server import llama_cpp_command
from agentbon.models.server import LOOPBACK
from agentbon.models.service import ModelService, listen_host
from agentbon.models.vllm_server import vllm_command
from tests.models.fake_openai import FakeOpenAIServer


def metrics(queries: float, hits: float) -> str:
    return (
        "# TYPE vllm:prefix_cache_queries_total counter\n"
        f'vllm:prefix_cache_queries_total{{engine="0",model_name="q"}} {queries}\n'
        f'vllm:prefix_cache_hits_total{{engine="0",model_name="q"}} {hits}\n'
    )


def test_hit_rate_is_the_delta_over_the_run_and_survives_a_counter_reset():
    with FakeOpenAIServer() as server:
        server.get_routes["/metrics"] = metrics(500, 100)  # earlier traffic on a shared server
        service = ModelService(ModelConfig(endpoint=server.url))
        assert service.start().endpoint == server.url
        server.get_routes["/metrics"] = metrics(1500, 900)
        stats = service.stats()
        assert stats["source"] == "metrics" and stats["launcher"] is None and "start_s" not in stats
        assert (stats["prefix_cache_queries"], stats["prefix_cache_hits"], stats["prefix_cache_hit_rate"]) == (
            1000,
            800,
            0.8,
        )
        server.get_routes["/metrics"] = metrics(200, 50)  # the server restarted: its counters began again
        assert service.stats()["prefix_cache_hit_rate"] == 0.25
        service.stop()


def test_an_endpoint_without_metrics_has_no_figures():
    with FakeOpenAIServer() as server:
        service = ModelService(ModelConfig(endpoint=server.url))
        service.start()
        assert service.stats() == {}


def test_a_server_listens_where_the_cluster_reaches_it():
    assert listen_host(None, 1, "10.1.2.3") == LOOPBACK  # one node: nothing else needs to reach it
    assert listen_host(None, 3, "10.1.2.3") == "10.1.2.3"  # rollouts on the other nodes must
    assert listen_host("0.0.0.0", 1, "10.1.2.3") == "0.0.0.0"  # model.serve_host decides where set
    config = ModelConfig(serve_host="10.9.9.9")
    assert ModelService.serve_host(config) == "10.9.9.9"


def test_a_server_off_the_loopback_is_told_to_require_a_key():
    llama = llama_cpp_command("/m.gguf", port=9, threads=1, ctx=64, alias="q", host="10.1.2.3", api_key="k1")
    assert llama[llama.index("--host") + 1] == "10.1.2.3" and llama[llama.index("--api_key") + 1] == "k1"
    vllm = vllm_command("/py", "/m", port=9, name="q", ctx=64, host="10.1.2.3", api_key="k2")
    assert vllm[vllm.index("--host") + 1] == "10.1.2.3" and vllm[vllm.index("--api-key") + 1] == "k2"
    assert "--api-key" not in vllm_command("/py", "/m", port=9, name="q", ctx=64)  # the loopback: no key


class GatedService(ModelService):
    """A ModelService whose llama.cpp server is the toy that serves once its gate file exists."""

    def __init__(self, config: ModelConfig, gate: str):
        super().__init__(config)
        self.gate = gate
        self.hosts: list[str] = []

    def local_server(self, config: ModelConfig, host: str, api_key: str | None):  # type: ignore[override]
        from tests.models.test_server import gated_server

        self.hosts.append(host)
        return gated_server(self.gate)


def test_a_server_for_a_local_ray_is_launched_before_ray_and_waited_for_by_start(tmp_path):
    gate = tmp_path / "loaded"
    service = GatedService(ModelConfig(launcher="llama-cpp"), str(gate))
    try:
        service.launch(ray_address=None)
        (pid,) = service.pids()
        assert service.hosts == [LOOPBACK]  # one node: the loopback, known before Ray is up
        gate.touch()
        config = service.start()
        assert service.pids() == {pid} and service.hosts == [LOOPBACK]  # the launched one, not a second
        assert config.endpoint and config.endpoint.startswith("http://127.0.0.1:") and service.started_s is not None
    finally:
        service.stop()
    assert service.pids() == set()


def test_nothing_is_launched_where_the_server_needs_the_cluster_first(tmp_path):
    on_cluster = GatedService(ModelConfig(launcher="llama-cpp"), str(tmp_path / "g"))
    on_cluster.launch(ray_address="10.0.0.1:6379")  # listens where the cluster's nodes reach it: known after Ray
    given = GatedService(ModelConfig(endpoint="http://gpu-host:8000/v1"), str(tmp_path / "g"))
    given.launch(ray_address=None)
    actors = GatedService(ModelConfig(launcher="vllm-actors"), str(tmp_path / "g"))
    actors.launch(ray_address=None)
    assert on_cluster.pids() == given.pids() == actors.pids() == set()
    assert on_cluster.hosts == given.hosts == actors.hosts == []
    pinned = GatedService(ModelConfig(launcher="llama-cpp", serve_host="127.0.0.1"), str(tmp_path / "g"))
    try:
        pinned.launch(ray_address="10.0.0.1:6379")  # model.serve_host says where: launched early on a cluster too
        assert len(pinned.pids()) == 1 and pinned.hosts == ["127.0.0.1"]
    finally:
        pinned.stop()
