"""The ``serving`` section of summary.json (``model_stats`` events) and its row in the cost table."""

from __future__ import annotations

from synth import make_run

from agentbon.report import RunReport, build_report, build_summary, render_markdown


def test_hit_rate_sums_the_invocations_of_a_resumed_run_and_shows_in_the_cost_table(tmp_path):
    store = make_run(tmp_path, {"t1": "PF"})
    assert build_summary(store)["serving"] is None
    store.append("model_stats", launcher="vllm", start_s=120.5, source="metrics",
                 prefix_cache_queries=1000, prefix_cache_hits=600, prefix_cache_hit_rate=0.6)  # fmt: skip
    store.append("model_stats", launcher="vllm", start_s=98.0, source="metrics",
                 prefix_cache_queries=3000, prefix_cache_hits=2600, prefix_cache_hit_rate=0.8667)  # fmt: skip
    summary = build_summary(store)
    assert summary["serving"] == {
        "launcher": "vllm", "launcher_reason": None, "launcher_figures": None, "source": "metrics", "start_s": [120.5, 98.0],
        "prefix_cache_queries": 4000, "prefix_cache_hits": 3200, "prefix_cache_hit_rate": 0.8,
        "gpu_s": None, "gpu_held_s": None, "engine_busy_s": None, "engines": [],
    }  # fmt: skip
    md = render_markdown(RunReport.model_validate(summary))
    assert "| prefix-cache hit rate (tokens) | 80.0% of 4,000 prompt tokens (3,200 hits) |" in md


def test_a_server_without_cache_counters_has_no_rate(tmp_path):
    store = make_run(tmp_path, {"t1": "P"})
    store.append("model_stats", launcher="llama-cpp", start_s=1.6)
    serving = build_summary(store)["serving"]
    assert serving["prefix_cache_hit_rate"] is None and serving["prefix_cache_queries"] is None
    assert "prefix-cache hit rate" not in render_markdown(build_report(store))


def test_engine_actors_gpu_seconds_and_tokens_per_second_reach_the_cost_table(tmp_path):
    """What ``pool_cache_stats`` records for engine actors: per engine its GPUs, busy and alive seconds and
    completion tokens/s; the run's GPU-seconds are busy x GPUs summed over engines and invocations."""
    from agentbon.models.actors import engine_time

    first = engine_time([
        {"gpus": 2, "busy_s": 100.0, "alive_s": 400.0, "requests": 50, "completion_tokens": 20000},
        None,  # a dead engine: no figures
        {"gpus": 2, "busy_s": 50.0, "alive_s": 400.0, "requests": 20, "completion_tokens": 5000},
    ])  # fmt: skip
    assert (first["gpu_s"], first["gpu_held_s"], first["engine_busy_s"]) == (300.0, 1600.0, 150.0)
    assert [(e["engine"], e["tokens_per_s"]) for e in first["per_engine"]] == [(0, 200.0), (2, 100.0)]
    idle = engine_time([{"gpus": 1, "busy_s": 0.0, "alive_s": 10.0, "requests": 0, "completion_tokens": 0}])
    assert idle["per_engine"][0]["tokens_per_s"] is None and idle["gpu_held_s"] == 10.0
    store = make_run(tmp_path, {"t1": "PF"})
    store.append("model_stats", launcher="vllm-actors", source="engines", **first)
    store.append("model_stats", launcher="vllm-actors", source="engines", **idle)  # a resume
    serving = build_summary(store)["serving"]
    assert (serving["gpu_s"], serving["gpu_held_s"], serving["engine_busy_s"]) == (300.0, 1610.0, 150.0)
    assert [(e["engine"], e["invocation"]) for e in serving["engines"]] == [(0, 0), (2, 0), (0, 1)]
    text = render_markdown(build_report(store))
    assert "| GPU-seconds: engines busy x GPUs / held (alive x GPUs); per rollout | 300 / 1,610; 150 |" in text
    assert "| engine 0 (2 GPU(s)) | 200.0 completion tokens/s over 100 s busy, 50 requests |" in text
    assert "| engine 0 (1 GPU(s), run 2) | — over 0 s busy, 0 requests |" in text


def test_the_batching_engine_counts_its_busy_time():
    from agentbon.models.vllm_engine import BatchingEngine
    from agentbon.testing.vllm import FakeLLM, FakeSamplingParams

    engine = BatchingEngine(FakeLLM(delay_s=0.05), FakeSamplingParams)
    engine.chat([{"role": "user", "content": "a"}])
    engine.chat([{"role": "user", "content": "b"}])
    stats = engine.stats()
    engine.close()
    assert stats["busy_s"] >= 0.1 and stats["batches"] == 2  # each batch slept 0.05 s inside the engine
