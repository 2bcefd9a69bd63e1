"""Checks against the Docker engine: reachable, the container limits it accepts, the network it has."""

from __future__ import annotations

from agentbon.config import NETWORK_MODES
from agentbon.preflight.base import Context, Problem, engine_address

ENGINE_FIX = (
    "start dockerd (as root: bash .ci/setup-docker.sh), point DOCKER_HOST at a running engine, "
    "or run with -c sandbox.backend=process (weaker isolation)"
)


def check_engine(ctx: Context) -> list[Problem]:
    """The Docker engine answers a ping (only where the sandboxes are Docker containers)."""
    if not ctx.uses_docker() or ctx.client() is not None:
        return []
    return [
        Problem(
            check="engine",
            cause=f"the Docker engine at {engine_address()} does not answer ({ctx.engine_error})",
            fix=ENGINE_FIX,
        )
    ]


def check_limits(ctx: Context) -> list[Problem]:
    """``sandbox.cpus`` within what the engine can give (it refuses a container asking for more CPUs than it has)."""
    if not ctx.uses_docker() or ctx.client() is None:
        return []
    cpus = ctx.info().get("NCPU")
    wanted = ctx.config.sandbox.cpus
    if wanted is not None and isinstance(cpus, int) and not 0.01 <= wanted <= cpus:  # None: no cap asked
        return [
            Problem(
                check="limits",
                cause=f"sandbox.cpus={wanted:g}: the engine has {cpus} CPU(s) and allows 0.01 to {cpus} per container",
                fix=f"-c sandbox.cpus={min(max(wanted, 0.01), cpus):g}",
            )
        ]
    return []


def check_network(ctx: Context) -> list[Problem]:
    """``sandbox.network`` exists on the engine (``none``, ``bridge`` and ``host`` always do)."""
    network = ctx.config.sandbox.network
    client = ctx.client() if ctx.uses_docker() else None
    if client is None or network in NETWORK_MODES:
        return []
    import docker

    if network.startswith("container:"):
        name = network.removeprefix("container:")
        try:
            client.containers.get(name)
            return []
        except docker.errors.NotFound:
            return [
                Problem(
                    check="network",
                    cause=f"sandbox.network={network}: no such container {name!r}",
                    fix=f"start container {name} first, or -c sandbox.network=none",
                )
            ]
    names = sorted({n.name for n in client.networks.list()})
    if network in names:
        return []
    return [
        Problem(
            check="network",
            cause=f"sandbox.network={network}: no such network; networks the engine has: {', '.join(names)}",
            fix=f"-c sandbox.network=<one of those> (none: no network), or create it: docker network create {network}",
        )
    ]
