"""The bash agent (mini-swe-agent style): the model answers with one shell command, it runs, the output goes back.

One step: check the limits, ask the model, parse exactly one ```bash block from the reply, run it in the
sandbox, feed back the exit code and the capped output. The rollout ends when the model runs the submit
command (``echo AGENTBON_SUBMIT``), or at a limit: steps (model calls), tokens (usage summed over calls),
wall time, or ``malformed_limit`` replies without exactly one command. Every exit is an exception whose
class name is the exit status and whose message is recorded in the trajectory. A command that runs past
its timeout is an observation like any other: the model is told and the loop goes on. A sandbox that is
gone raises ``SandboxGone`` out of ``run`` with the trajectory so far attached (``partial_result``).

The prompts never see the task record itself, only the problem statement (and hints where the config
asks for them), so hidden tests and the gold patch cannot leak into a prompt.
"""

from __future__ import annotations

import re
from typing import Any

from agentbon.agent.base import AgentExit, Conversation, FormatError, Submitted, render
from agentbon.config import AgentConfig, ModelConfig
from agentbon.errors import ContextLengthExceeded, ModelError
from agentbon.protocols import AgentResult, Model, Sandbox
from agentbon.types import ExecResult, RolloutSpec, Task

SUBMIT = "AGENTBON_SUBMIT"
"""The line a command prints to submit; the prompt tells the model to run ``SUBMIT_COMMAND``."""
SUBMIT_COMMAND = f"echo {SUBMIT}"

_LABELLED = re.compile(r"```(?:bash|sh|shell|console)[ \t]*\n(.*?)```", re.DOTALL)
_UNLABELLED = re.compile(r"```[ \t]*\n(.*?)```", re.DOTALL)


def parse_action(reply: str) -> list[str]:
    """The commands of a reply's ```bash blocks (unlabelled ``` blocks only where there is no labelled one)."""
    blocks = _LABELLED.findall(reply) or _UNLABELLED.findall(reply)
    return [b.strip() for b in blocks]


def submitted(result: ExecResult) -> bool:
    """True when the command printed the submit line first or last (``fix && echo AGENTBON_SUBMIT`` counts)."""
    lines = [line.strip() for line in result.output.splitlines() if line.strip()]
    return not result.timed_out and bool(lines) and SUBMIT in (lines[0], lines[-1])


def cut(text: str, limit: int) -> tuple[str, str, int]:
    """Head, tail and the number of characters elided between them, so that at most ``limit`` are shown."""
    if len(text) <= limit:
        return text, "", 0
    half = limit // 2
    return text[:half], text[len(text) - half :], len(text) - 2 * half


class BashAgent:
    """Multi-turn shell agent; ``run`` drives one rollout."""

    def __init__(self, config: AgentConfig, sampling: ModelConfig | None = None):
        self.config = config
        self.sampling = sampling
        """Sampling sent with every call; None leaves it to the model client's configured defaults."""

    def run(self, task: Task, sandbox: Sandbox, model: Model, spec: RolloutSpec) -> AgentResult:
        """Run the loop until the model submits or a limit is reached."""
        conv = Conversation(self.config, self.sampling, spec.seed)
        variables = self.prompt_variables(task, sandbox)
        conv.add("system", render(self.config, "bash_system.j2", **variables), kind="system")
        conv.add("user", render(self.config, "bash_instance.j2", **variables), kind="instance")
        try:
            while True:
                try:
                    self.step(conv, sandbox, model)
                except FormatError as e:
                    conv.malformed += 1
                    conv.unusable = "cut_off" if conv.cut_off else "no_command"
                    conv.add("user", str(e), kind="format_error", malformed=conv.malformed, cause=conv.unusable)
                    if conv.malformed >= self.config.malformed_cap():
                        raise
        except AgentExit as e:
            return conv.result(e.status, type(e).__name__, str(e))
        except ContextLengthExceeded as e:
            # The conversation outgrew the context window: a token limit by another name; the work so far stands.
            return conv.result("token_limit", type(e).__name__, str(e))
        except ModelError as e:
            return conv.result("agent_error", type(e).__name__, str(e))
        except BaseException as e:
            conv.attach_partial(e)
            raise

    def prompt_variables(self, task: Task, sandbox: Sandbox) -> dict[str, Any]:
        """What the templates may use: deliberately not the task record (it holds hidden tests and the gold patch)."""
        return {
            "problem_statement": task.problem_statement.strip(),
            "hints": task.hints.strip() if self.config.show_hints else "",
            "workdir": sandbox.workdir,
            "submit_command": SUBMIT_COMMAND,
            "command_timeout_s": self.config.command_timeout_s,
            "step_limit": self.config.step_limit,
        }

    def step(self, conv: Conversation, sandbox: Sandbox, model: Model) -> None:
        """One model call and, when the reply holds exactly one command, its execution and observation."""
        reply = conv.query(model)
        commands = parse_action(reply)
        if len(commands) != 1 or not commands[0]:
            raise FormatError(
                render(
                    self.config,
                    "bash_format_error.j2",
                    found=len(commands),
                    submit_command=SUBMIT_COMMAND,
                    cut_off=conv.cut_off,
                )
            )
        command = commands[0]
        # Never let one command outlive the rollout's wall-time budget.
        timeout = max(1.0, min(self.config.command_timeout_s, conv.remaining_s()))
        result = sandbox.exec(command, timeout=timeout)
        head, tail, elided = cut(result.output.rstrip(), self.config.observation_chars)
        observation = render(
            self.config,
            "bash_observation.j2",
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            timeout_s=timeout,
            truncated=result.truncated,
            output_head=head,
            output_tail=tail,
            elided=elided,
        )
        is_submit = submitted(result)
        conv.add(
            "user",
            observation,
            kind="submit" if is_submit else "observation",
            command=command,
            exit_code=result.exit_code,
            timed_out=result.timed_out,
            exec_s=round(result.duration_s, 4),
        )
        if is_submit:
            raise Submitted(result.output.strip())
