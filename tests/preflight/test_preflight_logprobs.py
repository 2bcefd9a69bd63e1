"""A selector that reads the model's logprobs (the scale judge, a tournament's pairwise judge) is refused at
preflight where the given server answers a request for them without any, naming who needs them; one that gives
them passes, and a run whose selectors read none is not asked."""

from __future__ import annotations

import json
import math

from agentbon.config import RunConfig
from agentbon.preflight import CHECKS, Context
from agentbon.preflight.capabilities import answers_logprobs, check_logprobs, needs_logprobs
from agentbon.testing.http import ScriptedServer


def _config(url: str, **select) -> RunConfig:
    return RunConfig(model={"endpoint": url, "name": "scripted"}, select=select)


def test_a_server_without_logprobs_is_refused_for_the_tournament_and_the_scale_judge():
    with ScriptedServer(lambda body: "A") as server:  # its answers carry no logprobs
        config = _config(server.url, selectors=["tests-then-tournament", "critic"], critic="scale-judge")
        [problem] = check_logprobs(Context(config, []))
    assert problem.fatal and problem.check == "logprobs" and server.url in problem.cause
    assert "scale-judge" in problem.cause and "tests-then-tournament" in problem.cause
    assert "select.comparator=critic" in problem.fix
    assert CHECKS["logprobs"] is check_logprobs


def test_what_reads_no_logprobs_is_not_asked():
    with ScriptedServer(lambda body: "A") as server:
        assert check_logprobs(Context(_config(server.url, selectors=["tests-then-critic"], critic="judge"), [])) == []
        assert check_logprobs(Context(_config(server.url, selectors=["tournament"], comparator="critic"), [])) == []
        assert server.requests == []
    assert needs_logprobs(RunConfig(select={"selectors": ["tournament"]}))  # auto: the pairwise judge


def test_a_server_with_logprobs_passes():
    step = {"token": "A", "logprob": math.log(0.7), "top_logprobs": [{"token": "A", "logprob": math.log(0.7)}]}
    assert answers_logprobs({"choices": [{"logprobs": {"content": [step]}}]})
    assert not answers_logprobs({"choices": [{"logprobs": None}]}) and not answers_logprobs({})
    server = ScriptedServer(lambda body: "A")
    original = server._chat

    def with_logprobs(body, port):  # the scripted reply, with logprobs added where asked
        fault, text = original(body, port)
        reply = json.loads(text)
        reply["choices"][0]["logprobs"] = {"content": [step]} if body.get("logprobs") else None
        return fault, json.dumps(reply)

    server._chat = with_logprobs  # type: ignore[method-assign]
    with server:
        assert check_logprobs(Context(_config(server.url, selectors=["tournament"]), [])) == []
