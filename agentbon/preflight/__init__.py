"""Preflight: everything that can be checked before the first rollout is checked then, and nothing is recorded.

``preflight(config, tasks, factories)`` runs every check and returns every problem found (fatal ones and
warnings); ``require_preflight`` raises one ``PreflightError`` (a ``ConfigError``: the CLI exits 2) listing
every fatal problem with its fix. Each check is a function of a ``Context``, so tests run them one by one.
Config ranges are checked earlier, by pydantic at load. See docs/preflight.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentbon.config import RunConfig
from agentbon.preflight.base import Context, PreflightError, Problem
from agentbon.preflight.capabilities import check_logprobs
from agentbon.preflight.command import check_command
from agentbon.preflight.disk import check_disk
from agentbon.preflight.engine import check_engine, check_limits, check_network
from agentbon.preflight.images import check_images
from agentbon.preflight.model import check_agent, check_endpoint, check_extras, check_harness, check_settings
from agentbon.types import Task

__all__ = ["CHECKS", "Context", "PreflightError", "Problem", "preflight", "require_preflight"]

Check = Callable[[Context], list[Problem]]


def check_budget(ctx: Context) -> list[Problem]:
    """``run.budget`` covers every task's first allotment (orchestrate/budget.py); a warning where it exceeds what
    ``n`` per task can use."""
    from agentbon.orchestrate.budget import Allocator

    allocator = Allocator.of(ctx.config)
    if allocator is None:
        return []
    tasks = len(ctx.tasks)
    problem = allocator.problem(tasks)
    if problem:
        least = tasks * allocator.first
        return [Problem(check="budget", cause=problem, fix=f"--budget {least} or more, or -c budget_first=1")]
    if allocator.total > tasks * allocator.n:
        return [
            Problem(
                check="budget", fatal=False,
                cause=f"run.budget ({allocator.total}) is more than n x tasks ({tasks * allocator.n}): at most "
                f"{tasks * allocator.n} rollouts can run",
                fix=f"raise -n to use it (n = {-(-allocator.total // max(tasks, 1))} spreads it evenly)",
            )
        ]  # fmt: skip
    return []


CHECKS: dict[str, Check] = {
    "budget": check_budget,
    "engine": check_engine,
    "limits": check_limits,
    "network": check_network,
    "images": check_images,
    "disk": check_disk,
    "extras": check_extras,
    "settings": check_settings,
    "harness": check_harness,
    "agent": check_agent,
    "endpoint": check_endpoint,
    "logprobs": check_logprobs,
    "command": check_command,
}
"""Every check, in the order they run; the Docker checks after ``engine`` skip where it failed (it reports)."""


def preflight(
    config: RunConfig, tasks: list[Task], factories: Any = None, *, checks: list[str] | None = None
) -> list[Problem]:
    """Run the checks (``checks``: by name; default all) and return every problem, fatal ones and warnings."""
    ctx = Context(config, tasks, factories)
    problems: list[Problem] = []
    for name in checks or list(CHECKS):
        problems += CHECKS[name](ctx)
    return problems


def require_preflight(config: RunConfig, tasks: list[Task], factories: Any = None) -> list[Problem]:
    """Raise ``PreflightError`` listing every fatal problem; return the warnings (to show, and go on)."""
    problems = preflight(config, tasks, factories)
    fatal = [p for p in problems if p.fatal]
    if fatal:
        raise PreflightError(fatal)
    return problems
