"""``model.endpoints``: several OpenAI-compatible servers of one model, with the rollouts routed across them.

The driver (``ModelService``) starts one named ``Router`` actor per run, the same router the engine pool of
``vllm-actors`` uses; rollouts in any Ray worker, on any node, find it by name (``model.pool``) and send each
call of a task to the endpoint it picks: the task's home endpoint, so that its prompts hit that server's prefix
cache, unless that one has ``model.max_inflight`` requests in flight, then the least-loaded one. An endpoint
whose call fails as a server failure is taken out of the rotation (the rollout is an infra error, retried as
usual); the restart the driver does after such a failure puts back every endpoint that answers again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from typing import Any

from agentbon.config import ModelConfig
from agentbon.errors import ConfigError, ServerFailure
from agentbon.models.openai_client import OpenAIClient
from agentbon.models.router import NAMESPACE, Router, TaskRouted, actor_names
from agentbon.protocols import ChatResponse

KIND = "model endpoint"
"""What the router's errors call the things it routes to."""


def router_call(router: Any, method: str, *args: Any) -> Any:
    """Call ``method`` on the router and wait for its answer: a Ray actor handle, or a ``Router`` in this process."""
    fn = getattr(router, method)
    if hasattr(fn, "remote"):
        import ray

        return ray.get(fn.remote(*args))
    return fn(*args)


def start_router(config: ModelConfig) -> tuple[str, Any]:
    """Start the run's named router actor over ``config.endpoints``; return the name workers find it by, and it."""
    import ray

    name = f"agentbon-endpoints-{uuid.uuid4().hex[:8]}"
    router_name, _ = actor_names(name, 0)
    count = len(config.endpoints)
    # Threaded: a caller waiting in ``acquire`` for a free slot must not block the releases that free one.
    router: Any = (
        ray.remote(Router)
        .options(name=router_name, namespace=NAMESPACE, num_cpus=0, max_concurrency=count * config.max_inflight + 64)
        .remote(count, config.max_inflight, KIND)
    )
    ray.get(router.stats.remote())  # it answers before any rollout looks for it
    return name, router


class RoutedEndpoint:
    """A ``Model`` bound to one task: each call takes a slot on the endpoint the router picks, calls that
    endpoint's client, and gives the slot back, also when the call fails."""

    def __init__(
        self,
        name: str,
        task_id: str,
        router: Any,
        clients: Sequence[OpenAIClient],
        defaults: dict[str, Any] | None = None,
        acquire_timeout_s: float = 600.0,
    ):
        self.name, self.task_id, self.router = name, task_id, router
        self.clients = list(clients)
        self.defaults = dict(defaults or {})
        """The clients' sampling defaults (as ``OpenAIClient``'s); the clients send them."""
        self.acquire_timeout_s = acquire_timeout_s

    def chat(self, messages: Sequence[dict[str, Any]], *, seed: int | None = None, **sampling: Any) -> ChatResponse:
        """One completion from the endpoint the router picks for this task."""
        return self._routed(lambda client: client.chat(messages, seed=seed, **sampling))

    def chat_n(
        self, messages: Sequence[dict[str, Any]], n: int, seeds: Sequence[int | None] | None = None, **sampling: Any
    ) -> list[ChatResponse]:
        """``n`` completions from one endpoint (one slot: vLLM answers ``n`` in one request)."""
        return self._routed(lambda client: client.chat_n(messages, n, seeds, **sampling))

    def _routed(self, call: Callable[[OpenAIClient], Any]) -> Any:
        """Run ``call`` on the picked endpoint's client within one router slot. The release is awaited: with a cap
        of one, a task's next call must not find its own finished call still counted."""
        i = router_call(self.router, "acquire", self.task_id, self.acquire_timeout_s)
        try:
            return call(self.clients[i])
        except ServerFailure:
            router_call(self.router, "mark_dead", i)  # the other endpoints take its tasks until it answers again
            raise
        finally:
            router_call(self.router, "release", i)


class EndpointModels(TaskRouted):
    """The ``Model`` source of ``model.endpoints``: ``model_for(task_id)`` keeps a task's calls on one endpoint.

    With ``model.pool`` set (by the driver) it uses the run's named router actor, shared by every rollout
    process; without, a ``Router`` of its own in this process. As a plain ``Model`` it routes every call as
    the task ``""``.
    """

    def __init__(self, config: ModelConfig):
        if not config.endpoints:
            raise ConfigError("model.endpoints: no endpoints to route to")
        from agentbon.models import client_for

        self.config, self.name = config, config.name
        self.defaults = config.sampling()
        self.clients = [client_for(config, url) for url in config.endpoints]
        self._router: Any = None if config.pool else Router(len(self.clients), config.max_inflight, KIND)

    def router(self) -> Any:
        """The router: the run's named actor (looked up once), or this object's own."""
        if self._router is None:
            import ray

            router_name, _ = actor_names(str(self.config.pool), 0)
            try:
                self._router = ray.get_actor(router_name, namespace=NAMESPACE)
            except ValueError as e:
                raise ServerFailure(f"the endpoint router {router_name!r} is not running: {e}") from e
        return self._router

    def model_for(self, task_id: str) -> RoutedEndpoint:
        """A Model bound to ``task_id`` (its endpoint is the router's choice, sticky per task)."""
        return RoutedEndpoint(self.name, task_id, self.router(), self.clients, self.defaults)

    def close(self) -> None:
        """Close the clients' connection pools."""
        for client in self.clients:
            client.close()

    def __enter__(self) -> EndpointModels:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class EndpointSet:
    """The driver's side of ``model.endpoints``: the run's named router actor, a client per endpoint (for
    probes), and each endpoint's prefix-cache counters when the run began (``ModelService`` holds one)."""

    def __init__(self, config: ModelConfig):
        from agentbon.models import client_for
        from agentbon.models.vllm_server import prefix_cache_stats

        self.urls = list(config.endpoints)
        self.name, self.router = start_router(config)
        self.clients = [client_for(config, url) for url in self.urls]
        self.baselines = [prefix_cache_stats(url) for url in self.urls]

    def revive(self) -> list[int]:
        """Put back into the rotation every endpoint taken out as dead that answers a probe again; their indexes."""
        dead = router_call(self.router, "stats")["dead"]
        back = [i for i in dead if self.clients[i].responsive()]
        for i in back:
            router_call(self.router, "revive", i)
        return back

    def stats(self) -> dict[str, Any]:
        """Prefix-cache figures summed over the endpoints that export ``/metrics``, with the router's counts."""
        from agentbon.models.vllm_server import cache_share, prefix_cache_stats

        shares = [
            cache_share(base, prefix_cache_stats(url)) for url, base in zip(self.urls, self.baselines, strict=True)
        ]
        return endpoint_cache_stats(router_call(self.router, "stats"), shares)

    def close(self) -> None:
        """Kill the router actor and close the clients; safe to call twice."""
        import ray

        try:
            ray.kill(self.router)
        except Exception:  # already gone (its driver's Ray shut down)
            pass
        for client in self.clients:
            client.close()


def endpoint_cache_stats(router: dict[str, Any], shares: Sequence[tuple[float, float] | None]) -> dict[str, Any]:
    """The figures of ``model_stats`` for several endpoints, in the shape of the engine pool's (``pool_cache_stats``):
    prompt tokens queried and found cached over the run, summed over the endpoints with counters (``shares``:
    ``(queries, hits)`` per endpoint, None where it exports none), and the router's home and spill counts."""
    counted = [s for s in shares if s is not None]
    queries = sum(q for q, _ in counted)
    hits = sum(h for _, h in counted)
    return {
        "source": "metrics",
        "endpoints": len(shares),
        "metrics_endpoints": len(counted),
        "requests": (router.get("home") or 0) + (router.get("spills") or 0),
        "prefix_cache_queries": int(queries),
        "prefix_cache_hits": int(hits),
        "prefix_cache_hit_rate": round(hits / queries, 6) if queries else None,
        "home": router.get("home"),
        "spills": router.get("spills"),
        "dead_endpoints": len(router.get("dead", [])),
    }
