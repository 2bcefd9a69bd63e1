"""The command agent: a program of the user's own runs in the rollout's sandbox; its model is a proxy of the rollout's.

``agent.command`` runs once, by bash, in the repository, under the rollout's wall-time limit, with the problem
statement in the file ``$AGENTBON_PROBLEM_STATEMENT`` and ``$OPENAI_BASE_URL`` / ``$OPENAI_API_KEY`` pointing at the
forwarder (agent/forwarder.py), which relays to the rollout's model proxy (agent/proxy.py) on a Unix socket in the
sandbox's channel folder: the sandbox keeps no other network. The patch is the repository's diff after the program
exits, taken by the rollout as for every agent. How it ends:

- a limit the proxy refused a call at, or the wall time: that limit (``LimitsExceeded``), the work so far stands;
- exit status 0: ``submitted``;
- any other exit status: the program's own failure, ``agent_error`` (``CommandFailed``), counted in n;
- the model server, the proxy or the forwarder failing: an infrastructure error escapes ``run`` with the trajectory
  so far attached, for the failure taxonomy (orchestrate/faults.py). See docs/agents.md, "Bring your own agent".
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from agentbon.agent.base import Conversation
from agentbon.agent.proxy import ModelProxy
from agentbon.config import AgentConfig, ModelConfig
from agentbon.errors import AgentMisconfigured, ProxyFailure
from agentbon.protocols import AgentResult, Model, Sandbox
from agentbon.types import ExecResult, RolloutSpec, Task

SOCKET = "model.sock"
PROBLEM = "problem_statement.md"
FORWARDER_FAILED = 125
API_KEY = "agentbon-proxy"
"""What ``$OPENAI_API_KEY`` holds in the sandbox: the run's own key never enters it (the proxy adds it)."""
OUTPUT_TAIL = 4_000
"""Characters of the program's output kept in the trajectory."""


def forwarder_source() -> str:
    return Path(__file__).with_name("forwarder.py").read_text()


def problem_text(task: Task, config: AgentConfig) -> str:
    """The problem statement (and the hints, with ``show_hints``): never the task record (hidden tests, gold patch)."""
    text = task.problem_statement.strip()
    if config.show_hints and task.hints.strip():
        text += "\n\nHints:\n" + task.hints.strip()
    return text + "\n"


class CommandAgent:
    """``agent.command`` in the sandbox, its model calls through the rollout's proxy; ``run`` drives one rollout."""

    def __init__(self, config: AgentConfig, sampling: ModelConfig | None = None):
        if not (config.command or "").strip():
            raise AgentMisconfigured("agent.type=command needs agent.command")
        self.config = config
        self.sampling = sampling

    def environment(self, sandbox: Sandbox, model: Model, problem: str) -> dict[str, str]:
        """What the program finds in its environment besides ``OPENAI_BASE_URL`` (set by the forwarder)."""
        c = self.config
        env = {
            "OPENAI_API_KEY": API_KEY, "AGENTBON_MODEL": model.name, "AGENTBON_PROBLEM_STATEMENT": problem,
            "AGENTBON_REPO": sandbox.workdir, "AGENTBON_STEP_LIMIT": str(c.step_limit),
            "AGENTBON_TOKEN_LIMIT": str(c.token_limit), "AGENTBON_TIME_LIMIT_S": f"{c.time_limit_s:g}",
        }  # fmt: skip
        agent_dir = getattr(sandbox, "agent_dir", None)
        if agent_dir:
            env["AGENTBON_AGENT_DIR"] = agent_dir
        return env

    def run(self, task: Task, sandbox: Sandbox, model: Model, spec: RolloutSpec) -> AgentResult:
        """Run the program once; its exit, or the limit the proxy refused a call at, is the rollout's."""
        conv = Conversation(self.config, self.sampling, spec.seed)
        channel = getattr(sandbox, "channel", None)
        if channel is None:
            raise AgentMisconfigured(
                "agent.type=command: the sandbox has no channel to the model proxy (open it with sandbox.channel on: "
                "RunConfig.rollout_sandbox)"
            )
        try:
            Path(channel.host, PROBLEM).write_text(problem_text(task, self.config))
            env = self.environment(sandbox, model, f"{channel.inside}/{PROBLEM}")
            exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
            line = (
                f"command -v python3 >/dev/null || {{ echo 'agentbon-forwarder: failed: no python3 in the sandbox' "
                f">&2; exit {FORWARDER_FAILED}; }}; env {exports} python3 -c {shlex.quote(forwarder_source())} "
                f"{shlex.quote(f'{channel.inside}/{SOCKET}')} {shlex.quote(self.config.command or '')}"
            )
            with ModelProxy(os.path.join(channel.host, SOCKET), conv, model) as proxy:
                result = sandbox.exec(line, timeout=max(1.0, conv.remaining_s()), workdir=sandbox.workdir)
            conv.add(
                "user", result.output[-OUTPUT_TAIL:], kind="program_exit", command=self.config.command,
                exit_code=result.exit_code, timed_out=result.timed_out, exec_s=round(result.duration_s, 4),
                requests=proxy.requests,
            )  # fmt: skip
            if proxy.failure is not None:
                raise proxy.failure
            if forwarder_failed(result):
                raise ProxyFailure(f"the forwarder in the sandbox failed: {result.output.strip()[-500:]}")
        except BaseException as e:
            conv.attach_partial(e)
            raise
        if proxy.limit is not None:
            return conv.result(proxy.limit.status, "LimitsExceeded", str(proxy.limit))
        if result.timed_out:
            message = f"time limit reached: the program ran past {self.config.time_limit_s:g} s and was stopped"
            return conv.result("time_limit", "LimitsExceeded", message)
        if result.exit_code == 0:
            return conv.result("submitted", "Submitted", "the program exited with status 0")
        return conv.result("agent_error", "CommandFailed", f"the program exited with status {result.exit_code}")


def forwarder_failed(result: ExecResult) -> bool:
    return result.exit_code == FORWARDER_FAILED and "agentbon-forwarder: failed:" in result.output
