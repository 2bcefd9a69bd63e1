"""Agents: the bash loop (multi-turn shell actions), the one-shot edit agent, mini-swe-agent's loop (``mini``, an
optional extra) and a program of the user's own (``command``); ``make_agent`` picks by config."""

from __future__ import annotations

from agentbon.agent.base import FormatError, LimitsExceeded, Submitted, partial_result
from agentbon.agent.bash import SUBMIT_COMMAND, BashAgent
from agentbon.agent.edit import EditAgent
from agentbon.agent.templates import environment
from agentbon.config import AgentConfig, ModelConfig
from agentbon.errors import ConfigError
from agentbon.protocols import Agent

__all__ = [
    "SUBMIT_COMMAND",
    "BashAgent",
    "EditAgent",
    "FormatError",
    "LimitsExceeded",
    "Submitted",
    "make_agent",
    "partial_result",
]


def make_agent(config: AgentConfig, sampling: ModelConfig | None = None) -> Agent:
    """The agent ``config.type`` names; ``sampling`` overrides the model client's temperature, top_p, max_tokens.

    The run's prompt templates are read and checked now, before any rollout of this process uses them."""
    environment(config)
    if config.type == "bash":
        return BashAgent(config, sampling)
    if config.type == "edit":
        return EditAgent(config, sampling)
    if config.type == "mini":
        from agentbon.agent.mini import MiniAgent  # the mini extra, imported only where it is asked for

        return MiniAgent(config, sampling)
    if config.type == "command":
        from agentbon.agent.command import CommandAgent

        return CommandAgent(config, sampling)
    raise ConfigError(f"agent.type: unknown agent type {config.type!r} (expected 'bash', 'edit', 'mini' or 'command')")
