"""ModelService's figures for the run record: vLLM's /metrics counters over the run, nothing where there are none."""

from __future__ import annotations

from agentbon.config import ModelConfig
from agentbon.models.service import ModelService
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
