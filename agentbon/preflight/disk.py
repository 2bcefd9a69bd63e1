"""Check free disk space where the run writes: the run directory's filesystem and Docker's data root."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from agentbon.preflight.base import Context, Problem

GIB = 1 << 30
MIB = 1 << 20
RUN_DIR_FLOOR = 256 * MIB
"""Free space the run directory needs besides its rollouts (summary, reports, the event log)."""
PER_ROLLOUT = 2 * MIB
"""What one rollout leaves in the run directory (trajectory, patch, verdict, logs), generously."""
DOCKER_FLOOR = 2 * GIB
"""Free space Docker's data root needs for the run's sandboxes (writable layers, task images being built)."""


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (the run directory is created later, by the run)."""
    path = path.expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_space_problem(path: str | Path, needed: int, what: str) -> Problem | None:
    """A problem where the filesystem of ``path`` has less than ``needed`` bytes free; None where it has enough."""
    where = _existing(Path(path))
    free = shutil.disk_usage(where).free
    if free >= needed:
        return None
    return Problem(
        check="disk",
        cause=f"{what} {path}: {free / GIB:.2f} GiB free on {where}, the run needs about {needed / GIB:.2f} GiB",
        fix=f"free at least {(needed - free) / GIB:.2f} GiB there "
        "(agentbon cleanup --images; docker system prune), or point the run elsewhere",
    )


def run_dir_need(ctx: Context) -> int:
    """Bytes the run directory needs: a floor plus ``PER_ROLLOUT`` for each of n × tasks rollouts."""
    return RUN_DIR_FLOOR + PER_ROLLOUT * ctx.config.n * len(ctx.tasks)


def check_disk(ctx: Context) -> list[Problem]:
    """Free space for the run directory (n × tasks rollouts) and, with Docker, on the engine's data root."""
    problems = [p for p in [free_space_problem(ctx.config.run_dir, run_dir_need(ctx), "run_dir")] if p]
    if not ctx.uses_docker() or ctx.client() is None:
        return problems
    host = os.environ.get("DOCKER_HOST", "")
    root = ctx.info().get("DockerRootDir")
    if not root or (host and not host.startswith("unix://")):
        return problems  # a remote engine: its disk is not ours to measure
    try:
        if not Path(root).is_dir():
            return problems  # the engine runs in another filesystem (a VM, rootless namespace)
        problem = free_space_problem(root, DOCKER_FLOOR, "Docker's data root")
    except OSError:  # another mount namespace (rootless, Docker Desktop): nothing to measure from here
        return problems
    return problems + ([problem] if problem else [])
