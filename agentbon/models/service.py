"""The run's model service on the driver: the configured endpoint (or endpoints, with their router), a local
server, or a pool of engine actors.

It also measures the serving side for the run record: start time and the prefix cache's hit rate over the
run (vLLM's ``/metrics`` counters before and after, or the engine actors' own token counts).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

from agentbon.config import ModelConfig
from agentbon.errors import starting
from agentbon.models.server import LOOPBACK


def listen_host(setting: str | None, nodes: int, node_ip: str) -> str:
    """Where a server agentbon starts listens: ``model.serve_host`` where set, else the loopback on a one-node
    cluster and this node's address on the cluster's network (``node_ip``) where it has more nodes, whose rollouts
    must reach it (docs/models.md, "Servers on a cluster")."""
    if setting:
        return setting
    return node_ip if nodes > 1 else LOOPBACK


class ModelService:
    """Makes sure of the run's model (``start``), restarts what it started (``restart``), measures it (``stats``)."""

    def __init__(self, config: ModelConfig):
        self.config = config
        self._server: Any = None
        self._pool: Any = None
        self._endpoints: Any = None
        """``model.endpoints``: their ``EndpointSet`` (the router actor the rollouts share)."""
        self._endpoint: str | None = None
        self._baseline: dict[str, float] = {}
        self._key: str | None = None
        self._t0: float | None = None
        """When ``launch`` started the server's process (its start time counts from there)."""
        self.started_s: float | None = None
        """Seconds until the server or engines answered (None for a given endpoint)."""

    def launch(self, *, ray_address: str | None = None) -> None:
        """Start the process of a server this run owns now, before Ray, and return at once: its load (seconds
        for llama.cpp, most of a minute for vLLM) then overlaps Ray's start, and ``start`` waits for it. Only
        where it listens does not depend on the cluster: a local Ray (one node: the loopback) or
        ``model.serve_host`` set; never for endpoints or engine actors, which need Ray or nothing."""
        from agentbon.models import resolve_model

        config = resolve_model(self.config)
        if self._server is not None or config.urls() or config.launcher == "vllm-actors":
            return
        if ray_address and not config.serve_host:
            return
        self.config = config
        self._t0 = time.monotonic()
        host = config.serve_host or LOOPBACK
        self._key = config.api_key or (None if host == LOOPBACK else secrets.token_urlsafe(24))
        with starting(self._part_and_fix):
            self._server = self.local_server(config, host, self._key)
            self._server.launch()

    def choose(self, *, log: Callable[[str], None] = lambda msg: None) -> Any:
        """The ``Choice`` of server this service will start (calibrating first where the CPU's flags leave it open:
        models/choice.py); None for endpoints given."""
        if self.config.urls():
            return None
        from agentbon.models.choice import choose

        return choose(self.config, calibrate=True, log=log)

    def pids(self) -> set[int]:
        """The process of a server this run launched (empty if none): Ray's renice leaves it alone."""
        proc = getattr(self._server, "proc", None)
        return {proc.pid} if proc is not None else set()

    def start(self) -> ModelConfig:
        """Make sure the model serves; return the model config with ``endpoint`` (or ``pool``) set.

        Several endpoints: ``pool`` names the router actor that workers route each task's calls through. What does
        not come up is a ``StartFailure`` naming it (a ``ConfigError`` stays one: the command must change)."""
        with starting(self._part_and_fix):
            return self._start()

    def _start(self) -> ModelConfig:
        t0 = self._t0 if self._t0 is not None else time.monotonic()  # launched early: counted from there
        from agentbon.models import resolve_model

        self.config = resolve_model(self.config)  # the stats name the launcher that ran
        config = self.config
        if config.endpoint:
            self._endpoint = config.endpoint
        elif config.endpoints:
            self._endpoints = self.start_endpoints(config)
            config = config.model_copy(update={"pool": self._endpoints.name})
        elif config.launcher == "vllm-actors":
            self._pool = self.start_pool(config)
            config = config.model_copy(update={"pool": self._pool.actor_name, "engines": len(self._pool.engines)})
        else:
            if self._server is None:  # not launched before Ray: where it listens may depend on the cluster
                host = self.serve_host(config)
                self._key = config.api_key or (None if host == LOOPBACK else secrets.token_urlsafe(24))
                self._server = self.local_server(config, host, self._key)
            self._endpoint = self._server.start()
            config = config.model_copy(update={"endpoint": self._endpoint, "api_key": self._key})
        if not self.config.urls():
            self.started_s = round(time.monotonic() - t0, 2)
        if self._endpoint:
            from agentbon.models.vllm_server import prefix_cache_stats

            self._baseline = prefix_cache_stats(self._endpoint)
        return config

    def _part_and_fix(self) -> tuple[str, str]:
        """What this service starts, and where to look when it does not come up."""
        config = self.config
        if config.endpoints:
            return "the router of model.endpoints", "see Ray's logs (/tmp/ray/session_latest/logs), or give one --endpoint"
        if config.launcher == "vllm-actors":
            return "the vLLM engines (vllm-actors)", (
                "their log is under /tmp/ray/session_latest/logs on the node they were placed on (worker-*.err); check "
                "model.path, model.vllm_python and the GPUs there, or give --endpoint"
            )
        log = getattr(self._server, "log_path", None)
        return f"the model server ({config.launcher})", (
            f"its log {log or '(none written)'} says why; fix that (model.path, the interpreter, memory, a free port), "
            "or give --endpoint"
        )

    @staticmethod
    def serve_host(config: ModelConfig) -> str:
        """Where the server listens (``listen_host`` with what Ray knows of the cluster now)."""
        if config.serve_host:
            return config.serve_host
        import ray

        if not ray.is_initialized():
            return LOOPBACK
        nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        return listen_host(None, nodes, str(ray.util.get_node_ip_address()))

    @staticmethod
    def local_server(config: ModelConfig, host: str, api_key: str | None) -> Any:
        """The (not yet launched) ``LocalServer`` of ``model.launcher`` (tests start a toy server here)."""
        from agentbon.models import local_server

        return local_server(config, host=host, api_key=api_key)

    @staticmethod
    def start_endpoints(config: ModelConfig) -> Any:
        """The ``EndpointSet`` of ``model.endpoints``: their named router actor, started on the Ray cluster."""
        from agentbon.models.endpoints import EndpointSet

        return EndpointSet(config)

    def start_pool(self, config: ModelConfig) -> Any:
        """The named ``EnginePool`` of ``vllm-actors`` (tests start fake engines here)."""
        from agentbon.models.actors import start_pool

        return start_pool(config)

    def restart(self) -> None:
        """Restart a server this run started (same port, so workers' clients keep working); replace dead engines;
        put endpoints taken out as dead back into the rotation where they answer again."""
        if self._server is not None:
            self._server.stop()
            self._server.start()
        if self._pool is not None:
            self._pool.revive()
        if self._endpoints is not None:
            self._endpoints.revive()

    def generated(self) -> int | None:
        """Completion tokens the server this run started has generated so far, by its own count (vLLM's ``/metrics``;
        None for llama.cpp, endpoints given and engine actors): the progress display's live rate."""
        if self._server is None or not self._endpoint:
            return None
        from agentbon.models.vllm_server import generated_tokens

        return generated_tokens(self._endpoint)

    def stats(self) -> dict[str, Any]:
        """The serving figures of this run so far; empty where nothing is known (no ``/metrics``, no engines)."""
        out: dict[str, Any] = {"launcher": None if self.config.urls() else self.config.launcher}
        if self.started_s is not None:
            out["start_s"] = self.started_s
        if self._pool is not None:
            from agentbon.models.actors import pool_cache_stats

            return {**out, **pool_cache_stats(self._pool.stats())}
        if self._endpoints is not None:
            return {**out, **self._endpoints.stats()}
        if self._endpoint:
            from agentbon.models.vllm_server import cache_share, prefix_cache_stats

            share = cache_share(self._baseline, prefix_cache_stats(self._endpoint))
            if share is not None:
                queries, hits = share
                return {
                    **out, "source": "metrics", "prefix_cache_queries": int(queries), "prefix_cache_hits": int(hits),
                    "prefix_cache_hit_rate": round(hits / queries, 6) if queries else None,
                }  # fmt: skip
        return out if self.started_s is not None else {}

    def stop(self) -> None:
        """Stop the server or engines this run started; safe to call twice."""
        if self._server is not None:
            self._server.stop()
            self._server = None
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._endpoints is not None:
            self._endpoints.close()
            self._endpoints = None
