"""The mini agent (mini-swe-agent's loop) on agentbon's model client and sandbox: exits, limits, usage, trajectory.

The docker tests run its loop against a real container of the tiny calc repository; the others use the fake sandbox
shipped in the package. Replies are scripted in mini-swe-agent's text form.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import pytest

from agentbon.agent import make_agent
from agentbon.agent.base import call_seed, partial_result
from agentbon.config import AgentConfig, RunConfig
from agentbon.errors import AgentMisconfigured, ContextLengthExceeded, MissingExtra, ModelError, SandboxGone
from agentbon.orchestrate.faults import classify
from agentbon.preflight.base import Context
from agentbon.preflight.model import check_agent
from agentbon.protocols import ChatResponse
from agentbon.testing import ScriptedModel

pytest.importorskip("minisweagent", reason="the mini extra: pip install 'agentbon[mini]'")

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
FIX = "sed -i 's/return a - b/return a + b/' calc/ops.py && python3 -c 'import calc; print(calc.add(2, 3))'"


def act(command: str) -> str:
    return f"THOUGHT: next.\n\n```mswea_bash_command\n{command}\n```\n"


class CachingModel:
    """A scripted model whose server reports every second prompt token as served from its prefix cache."""

    def __init__(self, replies: Sequence[Any]):
        self.inner = ScriptedModel(replies)
        self.name = "caching"

    def chat(self, messages: Sequence[dict[str, Any]], *, seed: int | None = None, **sampling: Any) -> ChatResponse:
        response = self.inner.chat(messages, seed=seed, **sampling)
        usage = response.usage.model_copy(update={"cached_tokens": response.usage.prompt_tokens // 2})
        return response.model_copy(update={"usage": usage})


def words(text: str) -> int:
    return len(text.split())


@pytest.mark.docker
def test_mini_agent_fixes_the_bug_and_submits_in_docker(docker_box, task, spec, secrets):
    replies = [act("cat calc/ops.py"), "I will fix it now.", act(FIX), act(SUBMIT)]
    model = CachingModel(replies)
    result = make_agent(AgentConfig(type="mini")).run(task, docker_box, model, spec)

    assert (result.status, result.exit_status, result.steps, result.malformed) == ("submitted", "Submitted", 4, 1)
    patch = docker_box.diff()
    assert "+    return a + b" in patch and "-    return a - b" in patch and "calc/ops.py" in patch

    # Usage: ScriptedModel counts words; recomputed here from what the model was sent and what it answered.
    calls = model.inner.calls
    prompt = sum(words(str(m["content"])) for c in calls for m in c["messages"])
    assert result.usage.prompt_tokens == prompt
    assert result.usage.completion_tokens == sum(words(r) for r in replies)
    assert result.usage.cached_tokens == sum(sum(words(str(m["content"])) for m in c["messages"]) // 2 for c in calls)
    assert result.usage.calls == 4
    # Seeds: one per call, derived from the rollout's seed and the step.
    assert [c["seed"] for c in calls] == [call_seed(spec.seed, step) for step in (1, 2, 3, 4)]

    # The trajectory: chat messages with extra; the unusable reply kept in its feedback's record.
    msgs = result.messages
    assert [m["role"] for m in msgs] == [
        "system",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert [m["extra"].get("kind") for m in msgs[:2]] == ["system", "instance"]
    assert task.problem_statement.strip() in msgs[1]["content"]
    assert "def add(a, b):" in msgs[3]["content"] and msgs[3]["extra"]["exit_code"] == 0
    feedback = msgs[4]["extra"]
    assert (feedback["kind"], feedback["model_response"], feedback["malformed"]) == ("format_error", replies[1], 1)
    assert msgs[6]["extra"]["raw_output"] == "5\n" and "<returncode>0</returncode>" in msgs[6]["content"]
    recorded = [m["extra"]["usage"] for m in msgs if "usage" in m["extra"]]
    assert sum(u["prompt_tokens"] for u in recorded) == prompt and len(recorded) == 4
    assert [m["extra"]["seed"] for m in msgs if "seed" in m["extra"]] == [c["seed"] for c in calls]
    assert msgs[-1]["extra"]["exit_status"] == "Submitted" and msgs[-1]["extra"]["status"] == "submitted"
    # Nothing of the grading data reached the model.
    for text in [str(m) for c in calls for m in c["messages"]]:
        assert not any(s in text for s in secrets)


@pytest.mark.docker
def test_mini_agent_time_limit_cuts_a_hanging_command(docker_box, task, spec):
    model = ScriptedModel([act("sleep 60"), act("ls")])
    t0 = time.monotonic()
    result = make_agent(AgentConfig(type="mini", time_limit_s=3)).run(task, docker_box, model, spec)
    assert time.monotonic() - t0 < 30
    assert (result.status, result.exit_status, result.steps) == ("time_limit", "LimitsExceeded", 1)
    last = result.messages[-1]["extra"]  # the hanging command's observation, then the exit's record
    assert last["timed_out"] is True and last["kind"] == "observation"
    assert "time limit reached" in last["exit_message"] and last["status"] == "time_limit"


@pytest.mark.docker
def test_mini_agent_sandbox_gone_is_infrastructure(docker_box, task, spec):
    def remove_then_act(messages):
        docker_box.close()
        return act("ls")

    model = ScriptedModel([act("ls"), remove_then_act])
    with pytest.raises(SandboxGone) as caught:
        make_agent(AgentConfig(type="mini")).run(task, docker_box, model, spec)
    failure = classify(caught.value, place="agent")
    assert failure.infra and failure.recorded_as == "infra_error"
    partial = partial_result(caught.value)
    assert partial is not None and partial.status == "infra_error" and partial.steps == 2


def test_mini_agent_step_limit(sandbox, task, spec):
    model = ScriptedModel([act("ls")], cycle=True)
    result = make_agent(AgentConfig(type="mini", step_limit=3)).run(task, sandbox, model, spec)
    assert (result.status, result.exit_status, result.steps) == ("step_limit", "LimitsExceeded", 3)
    assert len(model.calls) == 3


def test_mini_agent_token_limit(sandbox, task, spec):
    model = ScriptedModel([act("ls")], cycle=True)
    result = make_agent(AgentConfig(type="mini", token_limit=1500)).run(task, sandbox, model, spec)
    assert (result.status, result.exit_status) == ("token_limit", "LimitsExceeded")
    # The limit is checked before each call: the calls made stayed under it until the last one crossed it.
    per_call = [sum(words(str(m["content"])) for m in c["messages"]) + words(act("ls")) for c in model.calls]
    assert sum(per_call) >= 1500 > sum(per_call[:-1])
    assert result.usage.prompt_tokens + result.usage.completion_tokens == sum(per_call)


def test_mini_agent_repeated_format_errors_end_the_rollout(sandbox, task, spec):
    model = ScriptedModel(["no command here"], cycle=True)
    result = make_agent(AgentConfig(type="mini")).run(task, sandbox, model, spec)
    assert (result.status, result.exit_status, result.malformed, result.steps) == (
        "format_error", "RepeatedFormatError", 3, 3
    )  # fmt: skip


def test_mini_agent_model_errors_are_the_models(sandbox, task, spec):
    too_long = ScriptedModel([act("ls"), ContextLengthExceeded("prompt of 9000 tokens > 8192")])
    result = make_agent(AgentConfig(type="mini")).run(task, sandbox, too_long, spec)
    assert (result.status, result.exit_status, result.steps) == ("token_limit", "ContextLengthExceeded", 2)
    bad = ScriptedModel([ModelError("unparseable response")])
    result = make_agent(AgentConfig(type="mini")).run(task, sandbox, bad, spec)
    assert (result.status, result.exit_status) == ("agent_error", "ModelError")


def test_mini_agent_swebench_config_and_a_users_yaml(sandbox, task, spec, tmp_path):
    result = make_agent(AgentConfig(type="mini", mini_config="swebench")).run(
        task, sandbox, ScriptedModel([act("ls"), act(SUBMIT)]), spec
    )
    assert (result.status, result.steps) == ("submitted", 2)
    own = tmp_path / "mine.yaml"
    own.write_text(
        "agent:\n  system_template: 'Fix it.'\n  instance_template: 'Task: {{task}} in {{cwd}}'\n"
        "model:\n  action_regex: '```bash\\s*\\n(.*?)\\n```'\n"
        "  observation_template: 'rc={{output.returncode}} {{output.output}}'\n"
    )
    model = ScriptedModel(["```bash\nls calc\n```", f"```bash\n{SUBMIT}\n```"])
    result = make_agent(AgentConfig(type="mini", mini_config=str(own))).run(task, sandbox, model, spec)
    assert (result.status, result.steps) == ("submitted", 2)
    assert result.messages[1]["content"].startswith(f"Task: {task.problem_statement.strip()} in {sandbox.workdir}")
    assert result.messages[3]["content"].startswith("rc=0 ") and "ops.py" in result.messages[3]["content"]


def test_mini_config_path_must_exist(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        AgentConfig(type="mini", mini_config=str(tmp_path / "missing.yaml"))


def test_preflight_names_the_mini_extra_when_it_is_missing(tmp_path, monkeypatch):
    config = RunConfig(run_dir=str(tmp_path), agent={"type": "mini"})
    assert check_agent(Context(config, [], None)) == []
    bad = tmp_path / "bad.yaml"
    bad.write_text("agent:\n  step_limit: 3\n")
    bad_config = RunConfig(run_dir=str(tmp_path), agent={"type": "mini", "mini_config": str(bad)})
    [problem] = check_agent(Context(bad_config, [], None))
    assert "has no agent.system_template" in problem.cause
    monkeypatch.setitem(sys.modules, "minisweagent", None)  # what an install without the extra imports
    [problem] = check_agent(Context(config, [], None))
    assert "pip install 'agentbon[mini]'" in problem.cause and problem.check == "agent"
    with pytest.raises(MissingExtra):
        make_agent(AgentConfig(type="mini"))


def test_a_template_naming_an_unknown_variable_is_not_the_models(sandbox, task, spec, tmp_path):
    own = tmp_path / "typo.yaml"
    own.write_text("agent:\n  system_template: 'Fix it.'\n  instance_template: 'Task: {{taks}}'\n")
    with pytest.raises(AgentMisconfigured, match="taks") as caught:
        make_agent(AgentConfig(type="mini", mini_config=str(own))).run(task, sandbox, ScriptedModel([]), spec)
    assert classify(caught.value, place="agent").infra
    assert partial_result(caught.value).steps == 0


def test_a_prompts_folder_is_refused_for_the_mini_agent(tmp_path):
    (tmp_path / "bash_system.j2").write_text("x")
    with pytest.raises(ValueError, match="agent.mini_config"):
        AgentConfig(type="mini", prompts_dir=str(tmp_path))
