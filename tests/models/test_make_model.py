"""make_model / serving wiring, launcher command lines, and the real llama.cpp server (marker slow)."""

from __future__ import annotations

import importlib.util

import pytest

from agentbon.config import ModelConfig, RunConfig
from agentbon.errors import ConfigError
from agentbon.models import make_model, serving
from agentbon.models.llama_server import llama_cpp_command, llama_cpp_server
from agentbon.models.vllm_server import prefix_cache_stats, vllm_command
from agentbon.models.weights import QWEN_CODER_1_5B, cached_path
from tests.models.fake_openai import FakeOpenAIServer


def test_endpoint_config_gives_a_client_with_the_config_defaults():
    with FakeOpenAIServer() as srv:
        cfg = ModelConfig(endpoint=srv.url, name="served", temperature=0.3, top_p=0.9, max_tokens=77)
        with make_model(cfg) as model:
            assert model.chat([{"role": "user", "content": "x"}], seed=4).content == "seed=4"
        with serving(cfg) as resolved:
            assert resolved is cfg
    body = srv.requests[0]
    assert (body["model"], body["temperature"], body["top_p"], body["max_tokens"]) == ("served", 0.3, 0.9, 77)


def test_clients_of_a_llama_server_fan_out_one_request_at_a_time():
    from agentbon.models import client_for

    assert client_for(ModelConfig(launcher="llama-cpp"), "http://x/v1", supports_n=False).fanout_workers == 1
    assert client_for(ModelConfig(launcher="vllm"), "http://x/v1", supports_n=True).fanout_workers > 1
    assert client_for(ModelConfig(), "http://x/v1").fanout_workers > 1  # unknown server: parallel


def test_auto_launcher_is_vllm_where_vllm_and_a_model_for_it_are_installed(tmp_path, monkeypatch):
    from agentbon.models import resolve_launcher

    hf_dir = tmp_path / "hf"
    hf_dir.mkdir()
    monkeypatch.setenv("AGENTBON_VLLM_PYTHON", str(tmp_path / "no-such-python"))
    assert resolve_launcher(ModelConfig(path=str(hf_dir))).launcher == "llama-cpp"  # no vLLM interpreter
    python = tmp_path / "python"
    python.write_text("")
    monkeypatch.setenv("AGENTBON_VLLM_PYTHON", str(python))
    assert resolve_launcher(ModelConfig(path=str(hf_dir))).launcher == "vllm"
    assert resolve_launcher(ModelConfig(path="/m/model.gguf")).launcher == "llama-cpp"  # llama.cpp's format
    monkeypatch.setenv("AGENTBON_HOME", str(tmp_path / "empty"))
    assert resolve_launcher(ModelConfig()).launcher == "llama-cpp"  # the default model not converted for vLLM
    assert resolve_launcher(ModelConfig(launcher="llama-cpp", path=str(hf_dir))).launcher == "llama-cpp"  # as given
    assert resolve_launcher(ModelConfig(endpoint="http://h/v1")).launcher == "auto"  # nothing to launch
    assert RunConfig.model_validate({"model": {"path": str(hf_dir)}}).slots() == 8


def test_llama_command_queues_requests_instead_of_interrupting():
    cmd = llama_cpp_command("/m.gguf", port=1234, threads=1, ctx=4096, alias="q")
    assert cmd[1:3] == ["-m", "llama_cpp.server"]
    flags = dict(zip(cmd[3::2], cmd[4::2], strict=True))
    assert flags["--interrupt_requests"] == "False" and flags["--host"] == "127.0.0.1"
    assert (flags["--model"], flags["--port"], flags["--n_threads"], flags["--n_ctx"]) == (
        "/m.gguf",
        "1234",
        "1",
        "4096",
    )


def test_vllm_command_has_the_crash_workaround_and_cached_token_counts():
    cmd = vllm_command("/venv/bin/python", "/models/q-hf", port=9, name="q", ctx=4096)
    assert cmd[:3] == ["/venv/bin/python", "-m", "vllm.entrypoints.openai.api_server"]
    assert "--enable-prompt-tokens-details" in cmd
    assert int(cmd[cmd.index("--max-num-batched-tokens") + 1]) >= 16384


def test_missing_gguf_path_is_a_config_error(tmp_path):
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp not installed (pip install 'agentbon[local]')")
    with pytest.raises(ConfigError, match="model.path: .*nope.gguf is not a file"):
        llama_cpp_server(ModelConfig(path=str(tmp_path / "nope.gguf")))


def test_prefix_cache_stats_reads_vllm_metrics():
    metrics = (
        "# HELP vllm:prefix_cache_queries_total x\n"
        'vllm:prefix_cache_queries_total{engine="0",model_name="q"} 1200.0\n'
        'vllm:prefix_cache_hits_total{engine="0",model_name="q"} 960.0\n'
    )
    with FakeOpenAIServer() as srv:
        srv.get_routes["/metrics"] = metrics
        assert prefix_cache_stats(srv.url) == {"queries": 1200.0, "hits": 960.0}
    assert prefix_cache_stats("http://127.0.0.1:9/v1", timeout_s=0.5) == {}


@pytest.mark.slow
def test_real_llama_cpp_server_with_the_qwen_gguf_answers_a_seeded_chat():
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp not installed (pip install 'agentbon[local]')")
    if cached_path(QWEN_CODER_1_5B) is None:
        pytest.skip("Qwen GGUF not fetched (agentbon model fetch)")
    cfg = ModelConfig(launcher="llama-cpp", threads=2, ctx=2048, max_tokens=48, temperature=0.0)
    messages = [{"role": "user", "content": "Write a one-line Python function add(a, b). Code only."}]
    with make_model(cfg) as model:
        first = model.chat(messages, seed=1)
        assert "def add" in first.content
        assert first.usage.prompt_tokens > 10 and 0 < first.usage.completion_tokens <= 48
        assert model.chat(messages, seed=1).content == first.content  # greedy: same answer again
        samples = model.chat_n(messages, 2, seeds=[1, 2], temperature=0.8)
        assert len(samples) == 2 and all(s.content for s in samples)


@pytest.mark.slow
@pytest.mark.vllm
def test_real_vllm_cpu_server_batches_n_and_reports_cached_tokens():
    from agentbon.models.vllm_server import DEFAULT_HF_DIR, vllm_python
    from agentbon.models.weights import models_dir

    try:
        vllm_python()
    except Exception as e:  # any reason there is no vLLM here is a reason to skip
        pytest.skip(f"no vLLM interpreter ({e}); bash scripts/setup_vllm_cpu.sh")
    if not (models_dir() / DEFAULT_HF_DIR / "config.json").is_file():
        pytest.skip("default model not converted for vLLM; bash scripts/setup_vllm_cpu.sh")
    cfg = ModelConfig(launcher="vllm", ctx=4096, max_tokens=32, temperature=0.8)
    task = "You are fixing a bug in this repository. " * 40
    messages = [{"role": "system", "content": task}, {"role": "user", "content": "Reply with one short sentence."}]
    with make_model(cfg) as model:
        first = model.chat(messages, seed=3)
        again = model.chat(messages, seed=3)
        assert first.content and again.content == first.content  # seeded sampling repeats on vLLM
        assert again.usage.cached_tokens > 0  # the repeated prompt came from the prefix cache
        samples = model.chat_n(messages, 4, seeds=[1, 2, 3, 4])
        assert len(samples) == 4 and model.supports_n is True
        from agentbon.models.vllm_server import prefix_cache_stats

        stats = prefix_cache_stats(model.base_url)
        assert stats["hits"] > 0 and stats["queries"] >= stats["hits"]
