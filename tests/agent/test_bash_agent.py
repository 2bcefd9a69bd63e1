"""The bash agent loop with a scripted model in a fake sandbox: exits, limits, feedback, trajectory."""

from __future__ import annotations

import json
import time

import pytest

from agentbon.agent import SUBMIT_COMMAND, BashAgent, partial_result
from agentbon.agent.base import call_seed
from agentbon.agent.bash import parse_action, submitted
from agentbon.config import AgentConfig, ModelConfig
from agentbon.errors import ContextLengthExceeded, ModelError, SandboxGone
from agentbon.testing import ScriptedModel
from agentbon.types import ExecResult


def bash(command: str, thought: str = "THOUGHT: next step.") -> str:
    return f"{thought}\n\n```bash\n{command}\n```\n"


FIX = bash("sed -i 's/return a - b/return a + b/' calc/ops.py && sed -n '4,7p' calc/ops.py")
SUBMIT = bash(SUBMIT_COMMAND, "THOUGHT: done.")


def agent(**overrides) -> BashAgent:
    return BashAgent(AgentConfig(type="bash", **overrides), ModelConfig(temperature=0.3, top_p=0.9, max_tokens=256))


def test_submit_ends_the_rollout_and_leaves_the_fix_in_the_sandbox(task, sandbox, spec):
    model = ScriptedModel([bash("ls"), FIX, SUBMIT])
    result = agent().run(task, sandbox, model, spec)
    assert (result.status, result.exit_status, result.steps, result.malformed) == ("submitted", "Submitted", 3, 0)
    assert "+    return a + b" in sandbox.diff()
    observation = result.messages[3]
    assert (
        observation["role"] == "user" and "calc" in observation["content"] and "<exit_code>0" in observation["content"]
    )
    assert sandbox.execs == ["ls", FIX.split("```bash\n")[1].split("\n```")[0], SUBMIT_COMMAND]


def test_submit_line_printed_after_a_fix_in_the_same_command_counts(task, sandbox, spec):
    model = ScriptedModel([bash("sed -i 's/return a - b/return a + b/' calc/ops.py && echo AGENTBON_SUBMIT")])
    result = agent().run(task, sandbox, model, spec)
    assert result.status == "submitted" and result.steps == 1
    assert "+    return a + b" in sandbox.diff()


def test_step_limit(task, sandbox, spec):
    model = ScriptedModel([bash("ls")], cycle=True)
    result = agent(step_limit=3).run(task, sandbox, model, spec)
    assert (result.status, result.exit_status, result.steps) == ("step_limit", "LimitsExceeded", 3)
    assert len(model.calls) == 3
    assert "step limit" in result.messages[-1]["extra"]["exit_message"]


def test_token_limit_counts_usage_over_calls(task, sandbox, spec):
    model = ScriptedModel([bash("ls")], cycle=True)
    result = agent(token_limit=600).run(task, sandbox, model, spec)
    assert result.status == "token_limit" and result.exit_status == "LimitsExceeded"
    total = result.usage.prompt_tokens + result.usage.completion_tokens
    assert total >= 600 and result.usage.calls == result.steps
    # It stopped after the first call that took it past the limit, not later.
    usages = [m["extra"]["usage"] for m in result.messages if m["role"] == "assistant"]
    per_call = [u["prompt_tokens"] + u["completion_tokens"] for u in usages]
    assert sum(per_call) == total and sum(per_call[:-1]) < 600 and result.steps > 1


def test_time_limit_and_commands_never_outlive_it(task, sandbox, spec):
    model = ScriptedModel([bash("sleep 5")], cycle=True)
    t0 = time.monotonic()
    result = agent(time_limit_s=1.5, command_timeout_s=60).run(task, sandbox, model, spec)
    assert result.status == "time_limit" and result.exit_status == "LimitsExceeded"
    assert time.monotonic() - t0 < 5


def test_malformed_replies_are_fed_back_and_counted(task, sandbox, spec):
    two = bash("ls") + bash("pwd")
    model = ScriptedModel(["I would look at the files.", two, SUBMIT])
    result = agent().run(task, sandbox, model, spec)
    assert (result.status, result.malformed, result.steps) == ("submitted", 2, 3)
    errors = [m for m in result.messages if m["extra"].get("kind") == "format_error"]
    assert [e["extra"]["malformed"] for e in errors] == [1, 2]
    assert "had 0 bash code blocks" in errors[0]["content"] and "had 2 bash code blocks" in errors[1]["content"]
    # The model saw the feedback before its next reply; nothing of the malformed replies ran.
    assert model.calls[1]["messages"][-1]["content"] == errors[0]["content"]
    assert sandbox.execs == [SUBMIT_COMMAND]


def test_malformed_limit_ends_with_format_error(task, sandbox, spec):
    model = ScriptedModel(["no command here"], cycle=True)
    result = agent(malformed_limit=3).run(task, sandbox, model, spec)
    assert (result.status, result.exit_status, result.malformed, result.steps) == ("format_error", "FormatError", 3, 3)


def test_a_command_that_hangs_is_a_timeout_observation_and_the_loop_goes_on(task, sandbox, spec):
    model = ScriptedModel([bash("echo started; sleep 30"), SUBMIT])
    t0 = time.monotonic()
    result = agent(command_timeout_s=1).run(task, sandbox, model, spec)
    assert time.monotonic() - t0 < 10
    assert result.status == "submitted" and result.steps == 2
    observation = result.messages[3]
    assert observation["extra"]["timed_out"] is True
    assert "timed out after 1 seconds" in observation["content"] and "started" in observation["content"]


def test_long_output_is_cut_head_and_tail(task, sandbox, spec):
    model = ScriptedModel([bash("seq 1 20000"), SUBMIT])
    result = agent(observation_chars=1000).run(task, sandbox, model, spec)
    content = result.messages[3]["content"]
    assert "characters left out" in content and "\n1\n" in content and "20000" in content
    assert len(content) < 1600


def test_trajectory_is_openai_messages_with_extra(task, sandbox, spec):
    model = ScriptedModel([bash("ls"), "oops", SUBMIT])
    result = agent().run(task, sandbox, model, spec)
    json.dumps(result.messages)  # serialisable as it is
    assert [m["role"] for m in result.messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    for m in result.messages:
        assert set(m) == {"role", "content", "extra"} and isinstance(m["content"], str)
        assert isinstance(m["extra"]["step"], int) and m["extra"]["elapsed_s"] >= 0
    replies = [m for m in result.messages if m["role"] == "assistant"]
    assert [r["extra"]["step"] for r in replies] == [1, 2, 3]
    for r in replies:
        assert set(r["extra"]["usage"]) == {"prompt_tokens", "completion_tokens", "cached_tokens"}
        assert r["extra"]["model_latency_s"] >= 0 and r["extra"]["finish_reason"] == "stop"
    observation = result.messages[3]["extra"]
    assert observation["kind"] == "observation" and observation["exit_code"] == 0 and observation["exec_s"] > 0
    assert observation["command"] == "ls"
    last = result.messages[-1]["extra"]
    assert last["kind"] == "submit" and last["exit_status"] == "Submitted" and last["status"] == "submitted"
    assert result.usage.calls == 3 and result.model_s >= 0


def test_a_seed_per_call_from_the_rollout_seed_and_the_step(task, sandbox, spec):
    model = ScriptedModel([bash("ls"), SUBMIT])
    agent().run(task, sandbox, model, spec)
    assert [c["seed"] for c in model.calls] == [call_seed(7, 1), call_seed(7, 2)]
    assert call_seed(7, 1) != call_seed(7, 2) != call_seed(8, 2)
    assert all(c["temperature"] == 0.3 and c["top_p"] == 0.9 and c["max_tokens"] == 256 for c in model.calls)
    # The wire messages carry no ``extra``: servers reject unknown fields.
    assert all(set(m) == {"role", "content"} for c in model.calls for m in c["messages"])


def test_model_errors_end_the_rollout_with_the_work_kept(task, sandbox, spec):
    model = ScriptedModel([FIX, ContextLengthExceeded("prompt too long")])
    result = agent().run(task, sandbox, model, spec)
    assert (result.status, result.exit_status) == ("token_limit", "ContextLengthExceeded")
    assert "+    return a + b" in sandbox.diff()
    result = agent().run(task, sandbox, ScriptedModel([ModelError("empty choice")]), spec)
    assert (result.status, result.exit_status) == ("agent_error", "ModelError")


def test_sandbox_gone_escapes_with_the_trajectory_attached(task, sandbox, spec):
    def kill(messages):
        sandbox.kill()
        return bash("ls")

    with pytest.raises(SandboxGone) as info:
        agent().run(task, sandbox, ScriptedModel([bash("ls"), kill]), spec)
    partial = partial_result(info.value)
    assert partial is not None and partial.status == "infra_error" and partial.exit_status == "SandboxGone"
    assert partial.steps == 2 and len(partial.messages) == 5


def test_parse_action_and_submit_detection():
    assert parse_action(bash("ls -la")) == ["ls -la"]
    assert parse_action("```sh\npwd\n```") == ["pwd"]
    assert parse_action("```\npwd\n```") == ["pwd"]  # unlabelled only where nothing is labelled
    assert parse_action("```python\nx\n```\n```bash\nls\n```") == ["ls"]
    assert parse_action("no code") == []
    assert submitted(ExecResult(exit_code=0, output="AGENTBON_SUBMIT\n"))
    assert submitted(ExecResult(exit_code=0, output="fixed\nAGENTBON_SUBMIT\n"))
    assert not submitted(ExecResult(exit_code=0, output="a\nAGENTBON_SUBMIT\nb"))
    assert not submitted(ExecResult(exit_code=124, output="AGENTBON_SUBMIT", timed_out=True))


def test_without_sampling_the_model_clients_defaults_apply(task, sandbox, spec):
    model = ScriptedModel([SUBMIT])
    BashAgent(AgentConfig(type="bash")).run(task, sandbox, model, spec)
    assert set(model.calls[0]) == {"messages", "seed"}
