"""check_endpoint against a real HTTP server on 127.0.0.1 (stdlib, in a thread): down, wrong model, right model."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentbon.errors import EndpointMisconfigured, InfraError, ServerFailure
from agentbon.models.probe import check_endpoint


@contextmanager
def models_server(status: int = 200, body: object = None) -> Iterator[tuple[str, list[dict]]]:
    """Serve ``body`` (JSON) with ``status`` for ``GET /v1/models``, 404 elsewhere; yield the endpoint and the
    requests' headers."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append(dict(self.headers))
            code, payload = (status, body) if self.path == "/v1/models" else (404, {"detail": "Not Found"})
            data = (payload if isinstance(payload, str) else json.dumps(payload)).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def listing(*names: str) -> dict:
    return {"object": "list", "data": [{"id": n, "object": "model", "owned_by": "vllm"} for n in names]}


def test_the_served_model_passes_and_the_key_is_sent():
    with models_server(body=listing("Qwen/Qwen2.5-Coder-1.5B", "coder")) as (endpoint, seen):
        assert check_endpoint(endpoint + "/", "coder", api_key="sk-test", timeout_s=10) is None
    assert seen[0]["Authorization"] == "Bearer sk-test"


def test_nothing_listening_is_a_server_failure_naming_the_fix():
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ServerFailure, match=rf"127\.0\.0\.1:{port}/v1: nothing answers.*fix --endpoint"):
        check_endpoint(f"http://127.0.0.1:{port}/v1", "coder", timeout_s=5)


def test_a_server_that_does_not_list_the_model_is_misconfigured_and_says_which_it_serves():
    with models_server(body=listing("Qwen/Qwen2.5-Coder-1.5B")) as (endpoint, _):
        with pytest.raises(EndpointMisconfigured) as caught:
            check_endpoint(endpoint, "gpt-4o", timeout_s=10)
    message = str(caught.value)
    assert "does not serve model 'gpt-4o'" in message and "'Qwen/Qwen2.5-Coder-1.5B'" in message
    assert "--model Qwen/Qwen2.5-Coder-1.5B" in message
    assert isinstance(caught.value, InfraError)


def test_several_served_models_are_all_listed():
    with models_server(body=listing("a", "b")) as (endpoint, _):
        with pytest.raises(EndpointMisconfigured, match=r"serves 'a', 'b': --model NAME with one of them"):
            check_endpoint(endpoint, "c", timeout_s=10)


def test_a_refused_key_is_misconfigured():
    with models_server(401, {"error": {"message": "Incorrect API key provided", "code": "invalid_api_key"}}) as (
        endpoint,
        _,
    ):
        with pytest.raises(EndpointMisconfigured, match="HTTP 401.*model.api_key"):
            check_endpoint(endpoint, "coder", timeout_s=10)


def test_an_endpoint_without_v1_is_misconfigured_with_the_hint():
    with models_server(body=listing("coder")) as (endpoint, _):
        with pytest.raises(EndpointMisconfigured, match="HTTP 404.*ends in /v1"):
            check_endpoint(endpoint.removesuffix("/v1"), "coder", timeout_s=10)


@pytest.mark.parametrize("body", ["<html>welcome</html>", {"models": ["coder"]}])
def test_an_answer_that_is_no_model_list_is_misconfigured(body):
    with models_server(body=body) as (endpoint, _):
        with pytest.raises(EndpointMisconfigured, match="without an OpenAI model list"):
            check_endpoint(endpoint, "coder", timeout_s=10)


def test_a_server_error_is_a_server_failure():
    with models_server(503, {"error": "loading"}) as (endpoint, _):
        with pytest.raises(ServerFailure, match="HTTP 503"):
            check_endpoint(endpoint, "coder", timeout_s=10)
