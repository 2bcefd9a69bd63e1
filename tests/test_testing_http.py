"""The scripted HTTP model server: the real OpenAI client on the wire, its switchable faults, its request log."""

from __future__ import annotations

import pytest

from agentbon.errors import ModelTimeout, ServerFailure
from agentbon.models.openai_client import OpenAIClient
from agentbon.testing.http import ScriptedServer


def script(body: dict) -> str:
    return f"seed={body.get('seed')} turns={sum(1 for m in body['messages'] if m['role'] == 'assistant')}"


def client(server: ScriptedServer, timeout_s: float = 30.0) -> OpenAIClient:
    return OpenAIClient(server.url, "m", timeout_s=timeout_s, retries=3, backoff_s=0.01, max_backoff_s=0.02)


def test_replies_come_from_the_script_and_requests_are_logged() -> None:
    seen = []
    with ScriptedServer(script, model="m") as server, client(server) as c:
        server.hooks.append(lambda served, body: seen.append((served.seed, served.turns)))
        msgs = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "a"},
            {"role": "user", "content": "b"},
        ]
        reply = c.chat(msgs, seed=7)
        assert reply.content == "seed=7 turns=1"
        assert reply.usage.completion_tokens == 2
        assert seen == [(7, 1)]
        assert server.requests[0].client_port > 0 and not server.requests[0].fault
        assert c.responsive()


def test_http500_for_longer_than_the_retries_is_a_server_failure_then_it_heals() -> None:
    with ScriptedServer(script) as server, client(server) as c:
        server.fail("http500", seconds=600, requests=4)
        with pytest.raises(ServerFailure, match="HTTP 500 after 4 attempts"):
            c.chat([{"role": "user", "content": "x"}], seed=1)
        assert [r.fault for r in server.faulted()] == ["http500"] * 4
        assert c.chat([{"role": "user", "content": "x"}], seed=2).content.startswith("seed=2")


def test_a_short_fault_is_absorbed_by_the_clients_retries() -> None:
    with ScriptedServer(script) as server, client(server) as c:
        server.fail("drop", seconds=600, requests=2)
        assert c.chat([{"role": "user", "content": "x"}], seed=3).content.startswith("seed=3")
        assert [r.fault for r in server.requests] == ["drop", "drop", ""]


def test_dropped_connections_are_a_server_failure() -> None:
    with ScriptedServer(script) as server, client(server) as c:
        server.fail("drop", seconds=600)
        with pytest.raises(ServerFailure):
            c.chat([{"role": "user", "content": "x"}], seed=1)


def test_held_requests_time_out_while_the_server_answers_probes() -> None:
    with ScriptedServer(script, hang_s=30) as server, client(server, timeout_s=0.5) as c:
        server.fail("timeout", seconds=600, requests=2)
        with pytest.raises(ModelTimeout):
            c.chat([{"role": "user", "content": "x"}], seed=1)
        server.stop()  # releases the held handlers at once


def test_unknown_routes_are_404() -> None:
    import httpx

    with ScriptedServer(script, model="m") as server:
        base = server.url.removesuffix("/v1")
        assert httpx.get(f"{base}/metrics", trust_env=False).status_code == 404
        assert httpx.get(f"{server.url}/models", trust_env=False).json()["data"][0]["id"] == "m"
