"""Joining Ray: a local instance with sandbox slots, or an existing cluster; reaping on every node.

Sandbox slots are the Ray custom resource ``agentbon_sandbox`` (one per rollout unit): a local
``ray.init()`` declares ``sandbox_slots(config)`` of them, a cluster's nodes declare theirs with
``ray start --resources='{"agentbon_sandbox": N}'``. Verification uses ``agentbon_verify`` where the
cluster declares it (the local init declares ``verify.concurrency``), sandbox slots otherwise.
"""

from __future__ import annotations

import glob
import logging
import os
import signal
import socket
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentbon.config import BATCHED_SLOTS, SERIAL_SLOTS, ModelConfig, RunConfig
from agentbon.errors import ConfigError, StartFailure, starting

log = logging.getLogger(__name__)

SANDBOX = "agentbon_sandbox"
VERIFY = "agentbon_verify"
JOIN_TIMEOUT_S = 5.0
"""How long the driver waits for the cluster's address to accept a connection before it gives up on joining."""


@dataclass
class Cluster:
    """The Ray connection a run uses."""

    started: bool
    """True when this run started Ray (and shuts it down at the end)."""
    verify_resource: str
    slots: int = 1
    """Sandbox slots in the cluster (rollouts at once) when the run started."""
    joined: bool = False
    """True when this run connected to a running cluster (``ray_address``): it disconnects at the end and leaves
    the cluster running. False for both where the process was connected already (its caller's connection)."""

    def rollout_options(self) -> dict[str, Any]:
        """Ray options of a rollout unit: one sandbox slot, no CPU reservation (the slot is the cap)."""
        return {"num_cpus": 0, "resources": {SANDBOX: 1}, "max_retries": 0}

    def verify_options(self) -> dict[str, Any]:
        return {"num_cpus": 0, "resources": {self.verify_resource: 1}, "max_retries": 0}

    def shutdown(self) -> None:
        import ray

        if (self.started or self.joined) and ray.is_initialized():
            ray.shutdown()  # a joined cluster keeps running: only this driver's connection goes


def connect(config: RunConfig, spare: Collection[int] = ()) -> Cluster:
    """Join the cluster at ``config.ray_address``, or start a local Ray with the configured slots. ``spare``: the
    processes (with whatever they start meanwhile) of a model server launched before Ray, which Ray's renice
    must leave alone."""
    import ray

    connected = ray.is_initialized()
    with _keeping_sigterm_handler():
        started = _init(config, spare)
    total = ray.cluster_resources()
    if total.get(SANDBOX, 0) < 1:
        raise ConfigError(
            f"the Ray cluster has no {SANDBOX!r} resource: start its nodes with "
            f"ray start ... --resources='{{\"{SANDBOX}\": N}}' (N sandboxes at once on that node)"
        )
    return Cluster(
        started=started, joined=not started and not connected, verify_resource=VERIFY if total.get(VERIFY, 0) >= 1 else SANDBOX,
        slots=int(total.get(SANDBOX, 1)),
    )  # fmt: skip


def _init(config: RunConfig, spare: Collection[int] = ()) -> bool:
    """``ray.init`` unless Ray is up already; True when this call started a local Ray."""
    import ray

    if ray.is_initialized():
        return False
    if config.ray_address:
        part = f"Ray (joining the cluster at {config.ray_address})"
        fix = (
            f"start the cluster's head there (ray start --head --resources='{{\"{SANDBOX}\": N}}'), give "
            "--ray-address the head's HOST:6379, or leave it out for a local Ray"
        )
        check_listening(config.ray_address, part, fix)
        with starting(lambda: (part, fix)):
            ray.init(address=config.ray_address, log_to_driver=False)
        return False
    # Local Ray on one machine: no auth token to manage (a cluster keeps its own setting).
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    renice = shares_cpu_with_server(config)
    before = descendants(os.getpid()) if renice else set()
    with starting(lambda: ("Ray (a local instance)", "see its logs under /tmp/ray/session_latest/logs (memory, disk)")):
        ray.init(
            # "local": a Ray of this run's own. Without it, ray.init joins whatever /tmp/ray/ray_current_cluster names
            # (another run's Ray, or one left by a killed run) and then refuses this run's resources.
            address="local",
            resources={SANDBOX: sandbox_slots(config), VERIFY: config.verify.concurrency},
            include_dashboard=False,
            log_to_driver=False,
        )
    if renice:  # what ray.init started: gcs, raylet, agents, the workers the raylet has forked so far
        lower_priority(sorted(started_since(before, spare)), config.ray_niceness)
    return True


def check_listening(address: str, part: str, fix: str) -> None:
    """A ``StartFailure`` at once where nothing accepts a connection at a cluster's ``host:port``: ``ray.init`` would
    retry for minutes (more than 5 with Ray 2.60) before it gave up. ``auto`` and other forms are left to Ray."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=JOIN_TIMEOUT_S).close()
    except OSError as e:
        raise StartFailure(part, f"nothing answers at {address} ({e})", fix) from e


def _resolved(config: RunConfig) -> ModelConfig:
    """The run's model config, which ``run_batch`` resolved once (``models.resolve_model``): a launcher still ``auto``
    here is a caller's mistake, not something to guess."""
    if config.model.launcher == "auto" and not config.model.urls():
        raise ValueError("model.launcher is still auto: resolve the model first (models.resolve_model)")
    return config.model


def sandbox_slots(config: RunConfig) -> int:
    """Sandbox slots of a local Ray: ``concurrency`` when set; else ``SERIAL_SLOTS`` where agentbon starts llama.cpp's
    server (it answers one request at a time, so more rollouts would only wait), and ``BATCHED_SLOTS`` where requests
    are batched (a vLLM launcher, or an endpoint you give): a rollout holds its sandbox while it waits for the model, and
    a batching server only reaches its throughput with many requests in flight. vLLM's CPU build on 2 cores
    decoded 6, 43 and 50 tokens/s with 1, 16 and 32 requests of 2.4k-token prompts in flight; the demo at N=8
    took 1933 s with 16 slots where it took 2290 s with 8 (and compiled, top-p sampling)."""
    if config.concurrency is not None:
        return config.concurrency
    model = _resolved(config)
    return SERIAL_SLOTS if not model.urls() and model.launcher == "llama-cpp" else BATCHED_SLOTS


def shares_cpu_with_server(config: RunConfig) -> bool:
    """True where a local Ray's processes are reniced (``run.ray_niceness``): agentbon starts the model server on
    this machine, as a process of its own (not as Ray engine actors)."""
    model = _resolved(config)
    return bool(config.ray_niceness) and not model.urls() and model.launcher in ("llama-cpp", "vllm")


def descendants(root: int) -> set[int]:
    """The pids of every live process under ``root`` (children, theirs, ...). Empty where ``/proc`` is absent."""
    children: dict[int, list[int]] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            parent = int(Path(stat).read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(stat.split("/")[2]))
    found: set[int] = set()
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found.add(pid)
        todo.extend(children.get(pid, []))
    return found


def started_since(before: set[int], spare: Collection[int] = ()) -> set[int]:
    """This process's descendants that are not in ``before`` (what ``ray.init`` started), less the ``spare``
    processes and whatever they started meanwhile (a model server launched before Ray, loading beside it)."""
    server = set(spare).union(*(descendants(pid) for pid in spare))
    return descendants(os.getpid()) - before - server


def lower_priority(pids: list[int], niceness: int) -> int:
    """Raise every thread of ``pids`` to at least ``niceness`` (Linux keeps a niceness per thread, and a thread
    or process started later inherits its creator's); returns how many threads changed. Processes that are
    gone, or threads already nicer, are left as they are."""
    changed = 0
    for pid in pids:
        for task in glob.glob(f"/proc/{pid}/task/[0-9]*"):
            tid = int(task.rsplit("/", 1)[1])
            try:
                if os.getpriority(os.PRIO_PROCESS, tid) < niceness:
                    os.setpriority(os.PRIO_PROCESS, tid, niceness)
                    changed += 1
            except OSError:  # gone, or not ours
                pass
    return changed


def _sigterm_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def sigterm_as_ctrl_c() -> None:
    """Make SIGTERM (what batch schedulers, ``timeout`` and ``kill`` send) stop a run the way Ctrl-C does:
    cleanly, sandboxes removed, the store resumable. Call from the main thread before ``run_batch``."""
    signal.signal(signal.SIGTERM, _sigterm_interrupt)


def is_ctrl_c_handler(handler: Any) -> bool:
    """True when ``handler`` is the one ``sigterm_as_ctrl_c`` installs (the driver then treats SIGTERM as Ctrl-C)."""
    return handler is _sigterm_interrupt


@contextmanager
def _keeping_sigterm_handler() -> Iterator[None]:
    """Put back the caller's own SIGTERM handler after ``ray.init``, which replaces it with ``sys.exit``: a batch
    scheduler's SIGTERM must stop the run the way the caller chose (the CLI: like Ctrl-C, sandboxes removed and
    the store resumable), not end the driver with its rollouts' containers still running. A caller without one
    keeps Ray's (a ``SystemExit`` still runs the driver's ``finally`` blocks; the default action would not)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before: Callable[..., Any] | int | None = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if callable(before):
            signal.signal(signal.SIGTERM, before)


def alive_nodes() -> list[str]:
    """Ids of the nodes that are alive now."""
    import ray

    return [n["NodeID"] for n in ray.nodes() if n.get("Alive")]


def reap_async(config: RunConfig, factories: Any, labels: dict[str, str], nodes: list[str] | None = None) -> list[Any]:
    """Start a reaper for the labels on each alive node (or the given ones); return their refs."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from agentbon.orchestrate.workers import run_reap

    alive = set(alive_nodes())
    reap = ray.remote(run_reap)
    return [
        reap.options(
            num_cpus=0, max_retries=0, scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)
        ).remote(config, factories, labels)
        for n in (nodes or sorted(alive))
        if n in alive
    ]


def settle(refs: list[Any], timeout: float = 120.0) -> int:
    """Wait for reapers; return how many sandboxes they removed (a node that went away counts none)."""
    import ray

    if not refs:
        return 0
    removed = 0
    ready, late = ray.wait(refs, num_returns=len(refs), timeout=timeout)
    for ref in ready:
        try:
            removed += ray.get(ref)
        except Exception as e:  # the node went away mid-reap (its engine with it), or the reaper failed: say which
            log.warning("a reaper failed (%s: %s); `agentbon cleanup` on that node removes what is left",
                        type(e).__name__, e)  # fmt: skip
    if late:
        log.warning("%d reaper(s) did not finish within %.0f s; `agentbon cleanup` removes what is left",
                    len(late), timeout)  # fmt: skip
    return removed


def reap_everywhere(config: RunConfig, factories: Any, labels: dict[str, str]) -> int:
    """Remove leftover sandboxes matching the labels on every alive node; return how many."""
    return settle(reap_async(config, factories, labels))
