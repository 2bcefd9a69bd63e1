"""The ``serving`` section of summary.json (``model_stats`` events) and its row in the cost table."""

from __future__ import annotations

from synth import make_run

from agentbon.report import build_summary, render_markdown


def test_hit_rate_sums_the_invocations_of_a_resumed_run_and_shows_in_the_cost_table(tmp_path):
    store = make_run(tmp_path, {"t1": "PF"})
    assert build_summary(store)["serving"] is None
    store.append("model_stats", launcher="vllm", start_s=120.5, source="metrics",
                 prefix_cache_queries=1000, prefix_cache_hits=600, prefix_cache_hit_rate=0.6)  # fmt: skip
    store.append("model_stats", launcher="vllm", start_s=98.0, source="metrics",
                 prefix_cache_queries=3000, prefix_cache_hits=2600, prefix_cache_hit_rate=0.8667)  # fmt: skip
    summary = build_summary(store)
    assert summary["serving"] == {
        "launcher": "vllm", "source": "metrics", "start_s": [120.5, 98.0],
        "prefix_cache_queries": 4000, "prefix_cache_hits": 3200, "prefix_cache_hit_rate": 0.8,
    }  # fmt: skip
    assert "| prefix-cache hit rate (tokens) | 80.0% of 4,000 prompt tokens (3,200 hits) |" in render_markdown(summary)


def test_a_server_without_cache_counters_has_no_rate(tmp_path):
    store = make_run(tmp_path, {"t1": "P"})
    store.append("model_stats", launcher="llama-cpp", start_s=1.6)
    serving = build_summary(store)["serving"]
    assert serving["prefix_cache_hit_rate"] is None and serving["prefix_cache_queries"] is None
    assert "prefix-cache hit rate" not in render_markdown(build_summary(store))
