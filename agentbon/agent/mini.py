"""The mini agent: mini-swe-agent's own loop (``DefaultAgent``) and config files, on agentbon's sandbox and model.

mini-swe-agent's loop talks to a Model and an Environment through protocols it does not make implementations
inherit. Here ``SandboxEnvironment`` runs its commands in the rollout's sandbox, and ``ConversationModel`` asks
agentbon's model client through the rollout's ``Conversation``, so that steps, tokens (cached ones too), per-call
seeds, model time and the step, token and wall-time limits are counted exactly as for the bash and edit agents.
Replies are read in mini-swe-agent's text form (one fenced ``mswea_bash_command`` block, or the config's
``action_regex``) with its own parser, and observations rendered with its own templates. mini-swe-agent's exits map
onto rollout statuses: ``Submitted`` to submitted, an agentbon limit (raised as its ``LimitsExceeded``) to that
limit, ``RepeatedFormatError`` to format_error. Its own step and cost limits are switched off: agentbon's
are the rollout's. An error of the sandbox or the model server escapes ``run`` with the trajectory so far attached,
for the failure taxonomy (orchestrate/faults.py) to classify as infrastructure. See docs/agents.md.
"""

from __future__ import annotations

import shlex
from typing import Any

from jinja2 import TemplateError

from agentbon.agent.base import Conversation, LimitsExceeded
from agentbon.agent.mini_config import load_package, read_config
from agentbon.config import AgentConfig, ModelConfig
from agentbon.errors import AgentMisconfigured, ContextLengthExceeded, ModelError
from agentbon.protocols import AgentResult, Model, Sandbox
from agentbon.types import RolloutSpec, Task

TEXT_ACTION = r"```mswea_bash_command\s*\n(.*?)\n```"
"""mini-swe-agent's action pattern for text replies, where the config sets no ``model.action_regex``."""
SUBMIT_LINE = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
"""The first output line by which mini-swe-agent's configs have the model submit."""
OBSERVATION = "<returncode>{{output.returncode}}</returncode>\n<output>\n{{output.output}}</output>"
STATUS = {
    "Submitted": "submitted",
    "LimitsExceeded": "step_limit",
    "TimeExceeded": "time_limit",
    "RepeatedFormatError": "format_error",
}
"""Rollout status of each of mini-swe-agent's exit statuses (a limit of agentbon's says which one itself)."""


class SandboxEnvironment:
    """mini-swe-agent's Environment: each command runs in the rollout's sandbox, at its repository."""

    def __init__(self, sandbox: Sandbox, conv: Conversation, config: dict[str, Any]):
        self.sandbox, self.conv = sandbox, conv
        self.config = config
        """The config's ``environment`` section: its ``env`` is exported to every command; its ``cwd`` and
        ``timeout`` give way to the sandbox's repository and ``agent.command_timeout_s``."""
        self._uname: dict[str, str] | None = None

    def execute(self, action: dict, cwd: str = "", *, timeout: int | None = None) -> dict[str, Any]:
        """Run ``action["command"]``; raise mini-swe-agent's ``Submitted`` where it printed the submit line."""
        command = action.get("command", "")
        exports = "".join(f"export {k}={shlex.quote(str(v))}; " for k, v in (self.config.get("env") or {}).items())
        # Never let one command outlive the rollout's wall-time budget.
        limit = max(1.0, min(float(timeout or self.conv.config.command_timeout_s), self.conv.remaining_s()))
        result = self.sandbox.exec(exports + command, timeout=limit, workdir=cwd or self.sandbox.workdir)
        output = {
            "output": result.output,
            "returncode": result.exit_code,
            "exception_info": f"The command timed out after {limit:.0f} seconds." if result.timed_out else "",
            "extra": {
                "kind": "observation",
                "step": self.conv.steps,
                "elapsed_s": round(self.conv.elapsed(), 3),
                "command": command,
                "exit_code": result.exit_code,
                "timed_out": result.timed_out,
                "exec_s": round(result.duration_s, 4),
            },
        }
        lines = result.output.lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SUBMIT_LINE and result.exit_code == 0 and not result.timed_out:
            from minisweagent.exceptions import Submitted

            submission = "".join(lines[1:])
            raise Submitted(
                {"role": "exit", "content": submission, "extra": {"exit_status": "Submitted", "submission": submission}}
            )
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        """The section's settings, the sandbox's ``uname`` (system, release, version, machine) and its ``cwd``."""
        if self._uname is None:
            out = self.sandbox.exec("uname -s; uname -r; uname -v; uname -m", timeout=30).output.splitlines()
            self._uname = dict(zip(("system", "release", "version", "machine"), out + [""] * 4, strict=False))
        return {**self.config, **self._uname, "cwd": self.sandbox.workdir, **kwargs}

    def serialize(self) -> dict:
        return {"info": {"config": {"environment": self.config, "environment_type": "agentbon sandbox"}}}


class ConversationModel:
    """mini-swe-agent's Model: agentbon's model client, called through the rollout's ``Conversation``."""

    def __init__(self, model: Model, conv: Conversation, config: dict[str, Any]):
        self.model, self.conv = model, conv
        self.config = config
        """The config's ``model`` section: ``action_regex``, ``format_error_template``, ``observation_template``
        are read; where the model runs and how it samples are agentbon's (``model.*``)."""

    def query(self, messages: list[dict], **kwargs: Any) -> dict:
        """One model call; its reply with the one action it holds (mini-swe-agent's ``FormatError`` otherwise)."""
        from minisweagent import exceptions
        from minisweagent.models.utils.actions_text import parse_regex_actions

        wire = [{"role": m["role"], "content": m["content"]} for m in messages if m["role"] != "exit"]
        try:
            response, extra = self.conv.call(self.model, wire)
        except LimitsExceeded as e:
            exit_extra = {"exit_status": "LimitsExceeded", "submission": "", "status": e.status}
            raise exceptions.LimitsExceeded({"role": "exit", "content": str(e), "extra": exit_extra}) from None
        extra["cost"] = 0.0  # agentbon prices tokens itself (in the report), not per call
        try:
            actions = parse_regex_actions(
                response.content,
                action_regex=self.config.get("action_regex", TEXT_ACTION),
                format_error_template=self.config.get("format_error_template", "{{ error }}"),
                template_kwargs={"finish_reason": response.finish_reason},
            )
        except exceptions.FormatError as e:
            self.conv.malformed += 1
            self.conv.unusable = "cut_off" if self.conv.cut_off else "no_command"
            e.messages[0]["extra"].update(
                extra, kind="format_error", malformed=self.conv.malformed, cause=self.conv.unusable
            )
            raise
        return {"role": "assistant", "content": response.content, "extra": {**extra, "actions": actions}}

    def format_message(self, **kwargs: Any) -> dict:
        """The loop's own messages: the system prompt, the task and the exit record."""
        kind = {"system": "system", "user": "instance"}.get(kwargs.get("role", ""), "exit")
        extra = {"step": self.conv.steps, "elapsed_s": round(self.conv.elapsed(), 3), "kind": kind}
        return {**kwargs, "extra": {**extra, **kwargs.get("extra", {})}}

    def format_observation_messages(
        self, message: dict, outputs: list[dict], template_vars: dict | None = None
    ) -> list[dict]:
        from minisweagent.models.utils.actions_text import format_observation_messages

        template = self.config.get("observation_template", OBSERVATION)
        return format_observation_messages(outputs, observation_template=template, template_vars=template_vars)

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return {**self.config, "model_name": self.model.name, **kwargs}

    def serialize(self) -> dict:
        return {"info": {"config": {"model": self.config, "model_type": f"agentbon model {self.model.name}"}}}


class MiniAgent:
    """mini-swe-agent's ``DefaultAgent`` on the rollout's sandbox and model; ``run`` drives one rollout."""

    def __init__(self, config: AgentConfig, sampling: ModelConfig | None = None):
        load_package()
        self.config = config
        self.sampling = sampling
        self.sections = read_config(config.mini_config)

    def run(self, task: Task, sandbox: Sandbox, model: Model, spec: RolloutSpec) -> AgentResult:
        """Run mini-swe-agent's loop on the problem statement until it exits; map its exit onto a rollout status."""
        from minisweagent.agents.default import DefaultAgent

        conv = Conversation(self.config, self.sampling, spec.seed)
        # agentbon's limits are the rollout's: mini-swe-agent's own step, cost and time limits are switched off.
        settings = {
            **self.sections["agent"],
            "step_limit": 0,
            "cost_limit": 0.0,
            "wall_time_limit_seconds": 0,
            "max_consecutive_format_errors": self.config.malformed_cap(),
            "output_path": None,
        }
        env = SandboxEnvironment(sandbox, conv, self.sections["environment"])
        agent = DefaultAgent(ConversationModel(model, conv, self.sections["model"]), env, **settings)
        # The prompts see the problem statement only: never the task record (hidden tests, the gold patch).
        task_text = task.problem_statement.strip()
        if self.config.show_hints and task.hints.strip():
            task_text += "\n\nHints:\n" + task.hints.strip()
        try:
            try:
                info = agent.run(task_text)
            except TemplateError as e:
                raise AgentMisconfigured(f"agent.mini_config {self.config.mini_config}: a template fails: {e}") from e
        except ContextLengthExceeded as e:
            # The conversation outgrew the context window: a token limit by another name; the work so far stands.
            return self._result(conv, agent.messages, "token_limit", type(e).__name__, str(e))
        except ModelError as e:
            return self._result(conv, agent.messages, "agent_error", type(e).__name__, str(e))
        except BaseException as e:
            conv.messages = trajectory(agent.messages)
            conv.attach_partial(e)
            raise
        exit_status = info.get("exit_status", "")
        status = info.get("status") or STATUS.get(exit_status, "agent_error")
        message = agent.messages[-1].get("content", "") if agent.messages else ""
        return self._result(conv, agent.messages, status, exit_status, str(message))

    @staticmethod
    def _result(conv: Conversation, messages: list[dict], status: str, exit_status: str, message: str) -> AgentResult:
        conv.messages = trajectory(messages)
        return conv.result(status, exit_status, message)


def trajectory(messages: list[dict]) -> list[dict[str, Any]]:
    """mini-swe-agent's messages as chat messages with an ``extra`` each; its exit record is left to the result."""
    return [
        {"role": m["role"], "content": m.get("content") or "", "extra": dict(m.get("extra") or {})}
        for m in messages
        if m.get("role") != "exit"
    ]
