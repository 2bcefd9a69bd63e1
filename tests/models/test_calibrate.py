"""The calibration: what it counts from a streaming server, how it caches, and one real run on this machine."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from agentbon.config import ModelConfig
from agentbon.models import calibrate
from agentbon.models.cpu import parse_cpuinfo
from tests.models.test_choice import EPYC_AVX2, SAPPHIRE_RAPIDS

TOKENS_PER_REQUEST = 3


class StallingServer:
    """Streams ``TOKENS_PER_REQUEST`` chunks per request (plus a role chunk and an empty one, which carry no text),
    then stalls until stopped: every stream holds exactly that many tokens when the window closes."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.requests = self.warmed = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if not body.get("stream"):  # the warm-up: one completion token, then the server holds the prompt
                    outer.warmed += 1
                    reply = json.dumps({"choices": [{"message": {"content": "x"}}], "usage": {"completion_tokens": 1}})
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(reply)))
                    self.end_headers()
                    self.wfile.write(reply.encode())
                    return
                outer.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                chunks: list[dict[str, Any]] = [{"role": "assistant"}, {"content": ""}]
                chunks += [{"content": f"tok{i}"} for i in range(TOKENS_PER_REQUEST)]
                for delta in chunks:
                    self.wfile.write(f"data: {json.dumps({'choices': [{'delta': delta}]})}\n\n".encode())
                    self.wfile.flush()
                outer.released.wait(30)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.http.server_address[1]}/v1"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    # the LocalServer protocol calibrate() drives
    def start(self) -> str:
        return self.endpoint

    def stop(self) -> None:
        self.released.set()
        self.http.shutdown()
        self.http.server_close()


def test_measure_counts_the_text_chunks_each_stream_delivered_in_the_window() -> None:
    server = StallingServer()
    try:
        tokens, seconds = calibrate.measure(server.endpoint, "m", in_flight=3, window_s=3.0)
    finally:
        server.stop()
    assert tokens == 3 * TOKENS_PER_REQUEST  # role and empty chunks are not tokens; stalled streams add nothing
    assert 0 < seconds <= 3.0 and server.requests == 3


@pytest.mark.parametrize(
    ("line", "n"),
    [
        ('data: {"choices": [{"delta": {"content": "x"}}]}', 1),
        ('data: {"choices": [{"delta": {"content": ""}}]}', 0),
        ('data: {"choices": [{"delta": {"role": "assistant"}}]}', 0),
        ('data: {"choices": [], "usage": {"completion_tokens": 9}}', 0),
        ("data: [DONE]", 0),
        ("data: not json", 0),
        (": keep-alive", 0),
    ],
)
def test_a_token_is_a_chunk_with_text(line: str, n: int) -> None:
    assert calibrate._tokens(line) == n


def test_calibrate_measures_each_server_records_failures_and_caches(tmp_path: Path) -> None:
    cpu = parse_cpuinfo(EPYC_AVX2, cores=32)
    started: list[str] = []

    class Broken:
        def start(self) -> str:
            raise RuntimeError("exited with status 1 while starting")

        def stop(self) -> None:
            started.append("stopped broken")

    servers: dict[str, Any] = {"llama-cpp": StallingServer(), "vllm": Broken()}

    def start(config: ModelConfig) -> Any:
        started.append(config.launcher)
        return servers[config.launcher]

    cache = tmp_path / "calibration.json"
    ids = {"llama-cpp": "gguf", "vllm": "hf"}
    result = calibrate.calibrate(
        ModelConfig(), cpu, ["llama-cpp", "vllm"], servers=ids, start=start, window_s=2.0, cache=cache
    )
    assert started == ["llama-cpp", "vllm", "stopped broken"]
    assert servers["llama-cpp"].warmed == 1  # the shared prompt evaluated once, before the window
    llama, vllm = result.measured
    assert (llama.tokens, llama.in_flight) == (calibrate.SLOTS["llama-cpp"] * TOKENS_PER_REQUEST, 2)
    assert llama.tokens_per_s == pytest.approx(llama.tokens / llama.window_s, rel=0.05)
    assert (vllm.tokens_per_s, vllm.error) == (0.0, "RuntimeError: exited with status 1 while starting")
    assert calibrate.load(result.key, cache) == result
    # Another machine, another model or other thread settings are other keys.
    assert result.key == calibrate.cache_key(cpu, ModelConfig(), ids)
    assert result.key != calibrate.cache_key(parse_cpuinfo(EPYC_AVX2, cores=16), ModelConfig(), ids)
    assert result.key != calibrate.cache_key(parse_cpuinfo(SAPPHIRE_RAPIDS, cores=32), ModelConfig(), ids)
    assert result.key != calibrate.cache_key(cpu, ModelConfig(), {**ids, "vllm": "other"})
    assert result.key != calibrate.cache_key(cpu, ModelConfig(threads=1), ids)


def test_an_unreadable_cache_is_no_calibration(tmp_path: Path) -> None:
    cache = tmp_path / "calibration.json"
    assert calibrate.load("k", cache) is None
    cache.write_text("{not json")
    assert calibrate.load("k", cache) is None
    cache.write_text(json.dumps({"k": {"key": "k"}}))  # an older shape
    assert calibrate.load("k", cache) is None


class _Running:
    """A server that is already up, handed to the calibration as if it started it (stopping it is its owner's)."""

    def __init__(self, config: ModelConfig):
        self.endpoint, self.api_key = config.endpoint, config.api_key

    def start(self) -> str | None:
        return self.endpoint

    def stop(self) -> None:
        pass


@pytest.mark.slow
def test_a_real_calibration_on_this_machine_makes_and_records_a_choice(tmp_path: Path, request) -> None:
    """Both servers installed here (llama.cpp always, started by the calibration; vLLM's CPU build where the set-up
    made it: the session's server, tests/models/conftest.py), measured briefly: only that a choice with a reason
    comes out and is cached, whatever this CPU is."""
    import importlib.util

    from agentbon.models import local_server
    from agentbon.models.choice import Facts, decide, servers
    from agentbon.models.cpu import this_cpu
    from agentbon.models.vllm_server import vllm_available
    from agentbon.models.weights import cached_path

    if importlib.util.find_spec("llama_cpp") is None or cached_path() is None:
        pytest.skip("llama-cpp-python or the default weights are not installed (bash scripts/setup.sh)")
    config, cpu = ModelConfig(), this_cpu()
    launchers = ["llama-cpp", *(["vllm"] if vllm_available(config) else [])]

    def start(model: ModelConfig):  # the shared vLLM server is asked for after llama.cpp's measurement, as a run would
        return _Running(request.getfixturevalue("vllm_server")) if model.launcher == "vllm" else local_server(model)

    cache = tmp_path / "calibration.json"
    result = calibrate.calibrate(config, cpu, launchers, servers=servers(config), window_s=8.0, cache=cache, start=start)
    assert [m.launcher for m in result.measured] == launchers
    assert all(m.error is None for m in result.measured), result.measured
    assert result.rate("llama-cpp") and result.rate("llama-cpp") > 0  # type: ignore[operator]
    choice = decide("auto", Facts(cpu=cpu, gpu_vllm=False, vllm="vllm" in launchers, llama=True, calibration=result))
    assert choice.launcher in launchers and cpu.describe() in choice.reason
    assert calibrate.load(result.key, cache) == result
