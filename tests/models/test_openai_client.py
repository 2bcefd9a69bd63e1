"""OpenAIClient against a real HTTP server on 127.0.0.1: retries, dead servers, bad replies, n fan-out."""

from __future__ import annotations

import pickle
import socket
import time

import pytest

from agentbon.errors import (
    ContextLengthExceeded,
    EndpointMisconfigured,
    InfraError,
    ModelError,
    ModelTimeout,
    ServerFailure,
)
from agentbon.models.openai_client import OpenAIClient
from tests.models.fake_openai import FakeOpenAIServer, Reply, completion, echo_seed

MSGS = [{"role": "user", "content": "hi"}]


def client(url: str, **kw) -> OpenAIClient:
    kw.setdefault("backoff_s", 0.01)
    kw.setdefault("max_backoff_s", 0.05)
    return OpenAIClient(url, "m", **kw)


def test_chat_sends_model_seed_and_sampling_and_reads_usage_with_cached_tokens():
    usage = {"prompt_tokens": 120, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 96}}
    with FakeOpenAIServer(lambda i, b: Reply(body=completion(["hello"], usage))) as srv:
        with client(srv.url, defaults={"temperature": 0.8, "max_tokens": 64}) as c:
            r = c.chat(MSGS, seed=7, temperature=0.2, stop=["\n"], top_p=None)
    assert r.content == "hello" and r.finish_reason == "stop"
    assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.cached_tokens, r.usage.calls) == (120, 7, 96, 1)
    body = srv.requests[0]
    assert body["model"] == "m" and body["messages"] == MSGS and body["seed"] == 7
    assert body["temperature"] == 0.2 and body["max_tokens"] == 64 and body["stop"] == ["\n"]
    assert "top_p" not in body and "n" not in body


def test_transient_500_is_retried_then_succeeds():
    script = lambda i, b: Reply(500, {"error": {"message": "oops"}}) if i == 0 else Reply()  # noqa: E731
    with FakeOpenAIServer(script) as srv, client(srv.url) as c:
        assert c.chat(MSGS).content == "ok"
    assert len(srv.requests) == 2


def test_dead_engine_500_is_a_server_failure_without_retry():
    body = {"error": {"message": "EngineCore encountered an issue. See stack trace", "type": "EngineDeadError"}}
    with FakeOpenAIServer(lambda i, b: Reply(500, body)) as srv, client(srv.url, retries=5) as c:
        with pytest.raises(ServerFailure, match="engine is dead") as e:
            c.chat(MSGS)
    assert isinstance(e.value, InfraError)
    assert len(srv.requests) == 1


def test_repeated_500s_become_a_server_failure_after_the_retries():
    with FakeOpenAIServer(lambda i, b: Reply(500, "Internal Server Error")) as srv, client(srv.url, retries=2) as c:
        with pytest.raises(ServerFailure, match="HTTP 500 after 3 attempts"):
            c.chat(MSGS)
    assert len(srv.requests) == 3


def test_429_is_retried_honouring_retry_after():
    script = lambda i, b: Reply(429, {"error": "slow down"}, {"retry-after": "0.2"}) if i < 2 else Reply()  # noqa: E731
    with FakeOpenAIServer(script) as srv, client(srv.url, max_backoff_s=1.0) as c:
        start = time.monotonic()
        assert c.chat(MSGS).content == "ok"
    assert len(srv.requests) == 3
    assert time.monotonic() - start >= 0.4


@pytest.mark.parametrize(
    "status, body",
    [
        (400, {"error": "bad request"}),
        (422, {"error": "bad request"}),
        # A conversation the chat template refuses: this request's own fault.
        (400, {"error": {"message": "Conversation roles must alternate user/assistant", "param": None}}),
        (422, {"detail": [{"loc": ["body", "messages", 1, "role"], "msg": "Input should be 'user'"}]}),
    ],
)
def test_client_errors_about_the_request_are_model_errors_and_never_retried(status, body):
    with FakeOpenAIServer(lambda i, b: Reply(status, body)) as srv, client(srv.url) as c:
        with pytest.raises(ModelError, match=f"HTTP {status}") as e:
            c.chat(MSGS)
    assert not isinstance(e.value, InfraError)
    assert len(srv.requests) == 1


@pytest.mark.parametrize(
    "status, body",
    [
        (404, {"error": {"message": "The model `gpt-4o` does not exist.", "type": "NotFoundError", "code": 404}}),
        (404, {"error": {"message": "The model `x` does not exist", "code": "model_not_found", "param": None}}),
        (400, {"error": {"message": "model_not_found: unknown model 'x'"}}),
        (404, {"detail": "Not Found"}),  # --endpoint without /v1
    ],
)
def test_an_unknown_model_or_path_is_a_misconfigured_endpoint_never_retried(status, body):
    with FakeOpenAIServer(lambda i, b: Reply(status, body)) as srv, client(srv.url, retries=5) as c:
        with pytest.raises(EndpointMisconfigured, match=f"HTTP {status}, the endpoint does not serve model 'm'") as e:
            c.chat(MSGS)
    assert isinstance(e.value, InfraError) and "--model NAME" in str(e.value)
    assert len(srv.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"error": {"message": "Unsupported parameter: 'top_k'", "code": "unsupported_parameter", "param": "top_k"}},
        {"error": {"message": "Unrecognized request argument supplied: top_k", "param": None}},
        {"error": {"message": "logprobs must be <= 5", "type": "BadRequestError", "param": "top_logprobs"}},
        {"detail": [{"loc": ["body", "temperature"], "msg": "Input should be a valid number"}]},
    ],
)
def test_a_parameter_the_server_refuses_for_every_request_is_a_misconfigured_endpoint(body):
    with FakeOpenAIServer(lambda i, b: Reply(400, body)) as srv, client(srv.url) as c:
        with pytest.raises(EndpointMisconfigured, match="refuses a parameter sent with every request"):
            c.chat(MSGS)
    assert len(srv.requests) == 1


@pytest.mark.parametrize(
    "message, param",
    [
        ("Requested tokens (9000) exceed context window of 8192", None),
        # vLLM names max_tokens when prompt + max_tokens overflow: still this conversation's length.
        ("'max_tokens' is too large: 4096. This model's maximum context length is 8192 tokens and your request has "
         "5000 input tokens (4096 > 8192 - 5000).", "max_tokens"),
        ("The decoder prompt (length 9000) is longer than the maximum model length of 8192.", "input_tokens"),
    ],
)  # fmt: skip
def test_context_overflow_is_its_own_model_error(message, param):
    body = {"error": {"message": message, "type": "BadRequestError", "param": param}}
    with FakeOpenAIServer(lambda i, b: Reply(400, body)) as srv, client(srv.url) as c:
        with pytest.raises(ContextLengthExceeded):
            c.chat(MSGS)


@pytest.mark.parametrize("status", [401, 403])
def test_rejected_api_key_is_a_misconfigured_endpoint_never_retried(status):
    with FakeOpenAIServer(lambda i, b: Reply(status, {"error": "invalid api key"})) as srv, client(srv.url) as c:
        with pytest.raises(EndpointMisconfigured, match="model.api_key") as e:
            c.chat(MSGS)
    assert isinstance(e.value, InfraError)
    assert len(srv.requests) == 1


@pytest.mark.parametrize(
    "body",
    ["{not json", "[1, 2]", {"choices": []}, {"choices": [{"index": 0}]}, {"choices": [{"message": {"content": 3}}]}],
)
def test_malformed_reply_is_a_model_error_without_retry(body):
    with FakeOpenAIServer(lambda i, b: Reply(200, body)) as srv, client(srv.url) as c:
        with pytest.raises(ModelError):
            c.chat(MSGS)
    assert len(srv.requests) == 1


def test_read_timeout_is_retried_once():
    script = lambda i, b: Reply(delay_s=1.0) if i == 0 else Reply()  # noqa: E731
    with FakeOpenAIServer(script) as srv, client(srv.url, timeout_s=0.3) as c:
        assert c.chat(MSGS).content == "ok"
    assert len(srv.requests) == 2


def test_second_read_timeout_on_a_stuck_server_is_a_server_failure():
    with FakeOpenAIServer(lambda i, b: Reply(delay_s=1.0)) as srv, client(srv.url, timeout_s=0.3, retries=5) as c:
        srv.get_delay_s = 1.0  # the probe gets no answer either
        with pytest.raises(ServerFailure, match="twice, nor to a probe"):
            c.chat(MSGS)
    assert len(srv.requests) == 2


def test_second_read_timeout_on_a_busy_server_is_an_overload_not_a_dead_server():
    # The server still answers GET /models at once: it is slow (many requests in flight), so the server is kept.
    with FakeOpenAIServer(lambda i, b: Reply(delay_s=1.0)) as srv, client(srv.url, timeout_s=0.3, retries=5) as c:
        with pytest.raises(ModelTimeout, match="overloaded") as caught:
            c.chat(MSGS)
    assert not isinstance(caught.value, ServerFailure) and isinstance(caught.value, InfraError)
    assert len(srv.requests) == 2


def test_connection_reset_mid_request_is_retried():
    script = lambda i, b: Reply(drop=True) if i == 0 else Reply()  # noqa: E731
    with FakeOpenAIServer(script) as srv, client(srv.url) as c:
        assert c.chat(MSGS).content == "ok"
    assert len(srv.requests) == 2


def test_connection_refused_is_a_server_failure_after_retries():
    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with client(f"http://127.0.0.1:{port}/v1", retries=2) as c:
        with pytest.raises(ServerFailure, match="ConnectError.*after 3 attempts"):
            c.chat(MSGS)


def test_server_that_dies_mid_batch_raises_server_failure():
    script = lambda i, b: Reply(die=True) if i == 2 else Reply(delay_s=0.05)  # noqa: E731
    with FakeOpenAIServer(script) as srv, client(srv.url, supports_n=False, fanout_workers=1, retries=1) as c:
        with pytest.raises(ServerFailure):
            c.chat_n(MSGS, 5, seeds=list(range(5)))
    assert len(srv.requests) == 3


def test_chat_n_fans_out_when_the_server_ignores_n_and_remembers():
    with FakeOpenAIServer(echo_seed) as srv, client(srv.url) as c:
        assert c.supports_n is None
        out = c.chat_n(MSGS, 4, seeds=[10, 11, 12, 13])
        assert [r.content for r in out] == ["seed=10", "seed=11", "seed=12", "seed=13"]
        assert c.supports_n is False
        assert srv.requests[0]["n"] == 4 and all("n" not in b for b in srv.requests[1:])
        srv.requests.clear()
        out = c.chat_n(MSGS, 3, seeds=[1, 2, 3])
    assert sorted(r.content for r in out) == ["seed=1", "seed=2", "seed=3"]
    assert len(srv.requests) == 3 and all("n" not in b for b in srv.requests)


def test_chat_n_uses_server_side_n_where_honoured_and_usage_sums_to_the_reply():
    usage = {"prompt_tokens": 100, "completion_tokens": 13, "prompt_tokens_details": {"cached_tokens": 64}}
    script = lambda i, b: Reply(body=completion([f"c{k}" for k in range(b.get("n", 1))], usage))  # noqa: E731
    with FakeOpenAIServer(script) as srv, client(srv.url, supports_n=True) as c:
        out = c.chat_n(MSGS, 3, seeds=[5, 6, 7])
    assert [r.content for r in out] == ["c0", "c1", "c2"]
    assert len(srv.requests) == 1 and srv.requests[0]["n"] == 3 and srv.requests[0]["seed"] == 5
    assert sum(r.usage.prompt_tokens for r in out) == 100
    assert sum(r.usage.completion_tokens for r in out) == 13
    assert sum(r.usage.cached_tokens for r in out) == 64


def test_chat_n_rejects_a_wrong_number_of_seeds():
    with client("http://127.0.0.1:9/v1") as c, pytest.raises(ValueError, match="2 seeds for n=3"):
        c.chat_n(MSGS, 3, seeds=[1, 2])


def test_logprobs_are_passed_through_in_chat_and_legacy_shapes():
    chat_lp = {"content": [{"token": "YES", "logprob": -0.1, "top_logprobs": [{"token": "NO", "logprob": -2.4}]}]}
    legacy = {"tokens": ["YES"], "token_logprobs": [-0.1], "top_logprobs": [{"YES": -0.1, "NO": -2.4}]}
    for lp in (chat_lp, legacy):
        with FakeOpenAIServer(lambda i, b, lp=lp: Reply(body=completion(["YES"], logprobs=lp))) as srv:
            with client(srv.url) as c:
                r = c.chat(MSGS, logprobs=True, top_logprobs=2, max_tokens=1)
        assert srv.requests[0]["logprobs"] is True and srv.requests[0]["top_logprobs"] == 2
        assert r.logprobs[0]["token"] == "YES"
        assert {t["token"]: t["logprob"] for t in r.logprobs[0]["top_logprobs"]}["NO"] == -2.4


def test_client_pickles_to_a_fresh_connection_and_close_runs_callbacks():
    closed = []
    with FakeOpenAIServer() as srv:
        c = client(srv.url, supports_n=False, defaults={"temperature": 0.5})
        c.on_close(lambda: closed.append(1))
        clone = pickle.loads(pickle.dumps(c))
        assert clone.chat(MSGS, seed=3).content == "seed=3"
        assert srv.requests[0]["temperature"] == 0.5 and clone.supports_n is False
        clone.close()
        assert closed == []
        c.close()
        c.close()
    assert closed == [1]
