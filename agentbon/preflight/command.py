"""The ``command`` check: ``agent.type=command`` runs its program once, on the first task, before the run starts.

The program runs as in a rollout (its sandbox, the forwarder, the proxy), but against a stand-in model whose every
reply is one fixed line, with a step limit of one call and at most ``PREFLIGHT_S`` of wall time: no model server
need be up yet and no token is spent. A program that exits with a non-zero status before it asks the model anything
(a missing interpreter or module, a syntax error, a wrong path) is refused with its exit status and the last lines of
its output; a program that asks is working as far as agentbon can tell, whatever it makes of the stand-in's reply.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentbon.preflight.base import Context, Problem
from agentbon.protocols import ChatResponse
from agentbon.types import RolloutSpec

PREFLIGHT_S = 120.0
"""The most wall time the preflight gives the program."""
STAND_IN = "agentbon preflight: this reply stands in for the model; no model is asked before the run."


class StandIn:
    """The preflight's model: one fixed reply, no tokens."""

    name = "agentbon-preflight"

    def chat(self, messages: Sequence[dict[str, Any]], *, seed: int | None = None, **sampling: Any) -> ChatResponse:
        return ChatResponse(content=STAND_IN, finish_reason="stop")


def check_command(ctx: Context) -> list[Problem]:
    """Run ``agent.command`` once on the first task; refuse a program that fails before its first model call."""
    config = ctx.config
    if config.agent.type != "command" or not ctx.tasks:
        return []
    if ctx.uses_docker() and ctx.client() is None:
        return []  # the engine check says why
    from agentbon.agent.command import CommandAgent
    from agentbon.orchestrate.factories import default_backend

    task = ctx.tasks[0]
    agent_config = config.agent.model_copy(
        update={"step_limit": 1, "time_limit_s": min(config.agent.time_limit_s, PREFLIGHT_S)}
    )
    make = getattr(ctx.factories, "backend", None) or default_backend
    fix = f"run the program by hand in the task's image (agent.command: {config.agent.command!r}), or fix agent.command"
    try:
        backend = make(config.rollout_sandbox())
        with backend.open(task, {"run": config.run_id or "preflight", "stage": "preflight"}) as sandbox:
            spec = RolloutSpec(run_id="preflight", task_id=task.task_id, index=0, seed=0, model=StandIn.name)
            result = CommandAgent(agent_config).run(task, sandbox, StandIn(), spec)
    except Exception as e:
        cause = f"agent.type=command: the program could not be run on task {task.task_id}: {type(e).__name__}: {e}"
        return [Problem(check="command", cause=cause, fix=fix)]
    if result.steps > 0:
        return []
    last = result.messages[-1]["extra"] if result.messages else {}
    tail = "\n".join((result.messages[-1]["content"] if result.messages else "").strip().splitlines()[-10:])
    if result.status == "time_limit":
        cause = f"agent.type=command: the program asked the model nothing in {agent_config.time_limit_s:g} s on task {task.task_id}"
        return [
            Problem(
                check="command", cause=cause + (f"; its last output:\n{tail}" if tail else ""), fix=fix, fatal=False
            )
        ]
    if result.status == "agent_error":
        cause = (
            f"agent.type=command: the program exited with status {last.get('exit_code')} on task {task.task_id} "
            f"before asking the model anything; its last output:\n{tail}"
        )
        return [Problem(check="command", cause=cause, fix=fix)]
    return []
