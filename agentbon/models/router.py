"""Routing rollouts to vLLM engine actors: all N rollouts of a task go to one engine, so their shared prompt
prefix is computed once and then served from that engine's prefix cache; an engine at its in-flight cap
sends the request to the least-loaded one instead, and a dead engine is taken out of the rotation.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Sequence
from typing import Any

from agentbon.errors import AgentbonError, ServerFailure
from agentbon.models.vllm_engine import is_request_error, request_error
from agentbon.protocols import ChatResponse


class TaskRouted:
    """Base of the model sources that route by task (engine pool, several endpoints): ``model_for(task_id)`` gives a
    Model bound to the task; used as a plain Model, every call is routed as the task ``""``."""

    def model_for(self, task_id: str) -> Any:
        raise NotImplementedError

    def chat(self, messages: Sequence[dict[str, Any]], *, seed: int | None = None, **sampling: Any) -> ChatResponse:
        """One completion (routed as the task ``""``)."""
        return self.model_for("").chat(messages, seed=seed, **sampling)  # type: ignore[no-any-return]

    def chat_n(
        self, messages: Sequence[dict[str, Any]], n: int, seeds: Sequence[int | None] | None = None, **sampling: Any
    ) -> list[ChatResponse]:
        """``n`` completions in one request to one engine or endpoint (routed as the task ``""``)."""
        return self.model_for("").chat_n(messages, n, seeds, **sampling)  # type: ignore[no-any-return]


class Router:
    """In-flight counts per engine, a home engine per task, a cap per engine. Thread-safe (a threaded Ray actor).

    ``kind`` names what is routed to in its errors (vLLM engines, or the endpoints of ``model.endpoints``).
    """

    def __init__(self, engines: int, max_inflight: int, kind: str = "vLLM engine"):
        if engines < 1 or max_inflight < 1:
            raise ValueError(f"Router needs engines >= 1 and max_inflight >= 1, got {engines}, {max_inflight}")
        self.max_inflight, self.kind = max_inflight, kind
        self.load = [0] * engines
        self.dead: set[int] = set()
        self.home_hits = self.spills = 0
        self._cond = threading.Condition()

    def home(self, task_id: str) -> int:
        """The task's engine: a stable hash (not Python's salted ``hash``) so every process agrees."""
        digest = hashlib.sha256(task_id.encode()).digest()
        return int.from_bytes(digest[:8], "big") % len(self.load)

    def pick(self, task_id: str) -> int | None:
        """The engine for the task's next request, or None when every live engine is at its cap."""
        live = [i for i in range(len(self.load)) if i not in self.dead]
        if not live:
            raise ServerFailure(f"all {len(self.load)} {self.kind}s are dead")
        home = self.home(task_id)
        if home not in self.dead and self.load[home] < self.max_inflight:
            return home
        free = [i for i in live if self.load[i] < self.max_inflight]
        return min(free, key=lambda i: (self.load[i], i)) if free else None

    def acquire(self, task_id: str, timeout_s: float | None = None) -> int:
        """Reserve a slot on an engine for one request (waiting while all are full) and return its index."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cond:
            while (i := self.pick(task_id)) is None:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise ServerFailure(f"no {self.kind} had a free slot within {timeout_s:g}s (loads {self.load})")
                self._cond.wait(remaining)
            self.load[i] += 1
            if i == self.home(task_id):
                self.home_hits += 1
            else:
                self.spills += 1
            return i

    def release(self, engine: int) -> None:
        """Give back a slot taken by ``acquire``."""
        with self._cond:
            self.load[engine] = max(0, self.load[engine] - 1)
            self._cond.notify_all()

    def mark_dead(self, engine: int) -> None:
        """Take an engine out of the rotation (its actor died)."""
        with self._cond:
            self.dead.add(engine)
            self._cond.notify_all()

    def revive(self, engine: int) -> None:
        """Put a replaced engine back into the rotation, with no requests in flight."""
        with self._cond:
            self.dead.discard(engine)
            self.load[engine] = 0
            self._cond.notify_all()

    def stats(self) -> dict[str, Any]:
        with self._cond:
            return {"load": list(self.load), "dead": sorted(self.dead), "home": self.home_hits, "spills": self.spills}


class RoutedModel:
    """A ``Model`` bound to one task: each call goes to the engine the router picks. Picklable (Ray handles)."""

    def __init__(
        self,
        name: str,
        task_id: str,
        router: Any,
        engines: Sequence[Any],
        acquire_timeout_s: float = 600.0,
        defaults: dict[str, Any] | None = None,
    ):
        self.name, self.task_id = name, task_id
        self.router, self.engines = router, list(engines)
        self.acquire_timeout_s = acquire_timeout_s
        self.defaults = dict(defaults or {})
        """Sampling parameters sent with every request unless a call overrides them (as ``OpenAIClient``'s)."""

    def chat(self, messages: Sequence[dict[str, Any]], *, seed: int | None = None, **sampling: Any) -> ChatResponse:
        """One completion from the task's engine."""
        return self._call(messages, seed, 1, sampling)[0]

    def chat_n(
        self, messages: Sequence[dict[str, Any]], n: int, seeds: Sequence[int | None] | None = None, **sampling: Any
    ) -> list[ChatResponse]:
        """``n`` completions in one engine request (``seeds[0]`` seeds it)."""
        return self._call(messages, seeds[0] if seeds else None, n, sampling)

    def _call(
        self, messages: Sequence[dict[str, Any]], seed: int | None, n: int, sampling: dict[str, Any]
    ) -> list[ChatResponse]:
        import ray
        from ray.exceptions import RayActorError, RayTaskError

        sampling = {**self.defaults, **sampling}
        engine = ray.get(self.router.acquire.remote(self.task_id, self.acquire_timeout_s))
        try:
            dumps = ray.get(self.engines[engine].chat.remote(list(messages), seed, n, dict(sampling)))
        except RayActorError as e:
            ray.get(self.router.mark_dead.remote(engine))  # before anyone else is routed there
            raise ServerFailure(f"vLLM engine {engine} died: {e}") from e
        except RayTaskError as e:
            cause = getattr(e, "cause", None)
            if isinstance(cause, AgentbonError):
                raise cause from e
            if cause is not None and is_request_error(cause):  # this request's own fault (isolated by the engine)
                raise request_error(cause, f"vLLM engine {engine}") from e
            raise ServerFailure(f"vLLM engine {engine} failed: {type(cause).__name__}: {cause}") from e
        finally:
            self.router.release.remote(engine)
        return [ChatResponse.model_validate(d) for d in dumps]


NAMESPACE = "agentbon"
"""Ray namespace of named engine pools (workers find a pool's actors by name, see ``attach``)."""


def actor_names(pool: str, engines: int) -> tuple[str, list[str]]:
    """The router's and the engines' actor names of the pool named ``pool``."""
    return f"{pool}-router", [f"{pool}-engine-{i}" for i in range(engines)]


class EnginePool:
    """``engines`` vLLM engine actors plus a router actor; ``model_for(task_id)`` hands out Models.

    ``actor_name``: name the actors (``{actor_name}-router``, ``{actor_name}-engine-{i}``) so that Ray workers
    can ``attach`` to the pool; ``runtime_env``: the engines' (e.g. ``py_executable`` of a venv with vllm).

    ``num_gpus``: GPUs per engine (its tensor-parallel size on a GPU; 0 on CPU). Each GPU engine gets a placement
    group of one bundle of ``num_gpus`` GPUs, strictly packed, so a tensor-parallel engine's GPUs sit on one node;
    the group is reserved before the engine starts (an engine that cannot be placed says so within
    ``ready_timeout_s``) and kept for the engine's whole life, so a revived engine gets the same GPUs back.
    Rollouts reach engines on any node: the router's task affinity and load-aware spill span them all.
    """

    def __init__(
        self,
        model: str,
        *,
        name: str | None = None,
        engines: int = 1,
        max_inflight: int = 64,
        num_gpus: float = 1.0,
        num_cpus: float = 0.0,
        ready_timeout_s: float = 1800.0,
        engine_kwargs: dict[str, Any] | None = None,
        actor_cls: type | None = None,
        actor_name: str | None = None,
        runtime_env: dict[str, Any] | None = None,
    ):
        import ray

        from agentbon.models.vllm_engine import EngineActor

        self.name = name or model
        self.actor_name, self.model, self.engine_kwargs = actor_name, model, engine_kwargs
        self.ready_timeout_s, self.num_gpus, self.num_cpus = ready_timeout_s, num_gpus, num_cpus
        router_name, engine_names = actor_names(actor_name or "", engines)
        self._cls: Any = ray.remote(actor_cls or EngineActor)
        # Threaded actors: up to max_inflight requests wait in one engine's batch queue at once.
        self._opts: dict[str, Any] = {"num_gpus": num_gpus, "num_cpus": num_cpus, "max_concurrency": max_inflight + 2}
        if runtime_env:
            self._opts["runtime_env"] = runtime_env
        self._names = engine_names if actor_name else [None] * engines
        self.groups: list[Any] = []
        """One placement group per GPU engine (none on CPU)."""
        if num_gpus > 0:
            self.groups = self._reserve(engines)
        self.engines: list[Any] = [self._engine(i) for i in range(engines)]
        router_cls: Any = ray.remote(Router)
        named = {"name": router_name, "namespace": NAMESPACE} if actor_name else {}
        self.router: Any = router_cls.options(num_cpus=0, max_concurrency=engines * max_inflight + 64, **named).remote(
            engines, max_inflight
        )
        self._await_ready(self.engines, close_on_failure=True)

    def _reserve(self, engines: int) -> list[Any]:
        """A strictly packed placement group of ``num_gpus`` GPUs per engine, all ready, or ``ServerFailure``."""
        import ray
        from ray.util.placement_group import placement_group, remove_placement_group

        bundle = {"GPU": self.num_gpus, **({"CPU": self.num_cpus} if self.num_cpus else {})}
        groups = [placement_group([bundle], strategy="STRICT_PACK") for _ in range(engines)]
        try:
            ray.get([g.ready() for g in groups], timeout=self.ready_timeout_s)
        except ray.exceptions.GetTimeoutError as e:
            for group in groups:
                remove_placement_group(group)
            raise ServerFailure(
                f"cannot place {engines} vLLM engine(s) of {self.num_gpus:g} GPU(s) each on one node within "
                f"{self.ready_timeout_s:g}s: the cluster's nodes lack the free GPUs (ray status; "
                "model.engines, model.tensor_parallel_size)"
            ) from e
        return groups

    def _engine(self, i: int) -> Any:
        named = {"name": self._names[i], "namespace": NAMESPACE} if self._names[i] else {}
        placed: dict[str, Any] = {}
        if self.groups:
            from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

            placed["scheduling_strategy"] = PlacementGroupSchedulingStrategy(
                self.groups[i], placement_group_bundle_index=0, placement_group_capture_child_tasks=True
            )
        return self._cls.options(**self._opts, **named, **placed).remote(self.model, self.engine_kwargs)

    def _await_ready(self, engines: list[Any], close_on_failure: bool) -> None:
        import ray

        try:  # surfaces a load failure (MissingExtra, out of memory) now, and engines that cannot be placed
            ray.get([e.ready.remote() for e in engines], timeout=self.ready_timeout_s)
        except ray.exceptions.GetTimeoutError as e:
            if close_on_failure:
                self.close(grace_s=0)
            raise ServerFailure(
                f"{len(engines)} vLLM engine(s) not ready within {self.ready_timeout_s:g}s: does the cluster have "
                f"{self.num_gpus:g} GPU(s) and {self.num_cpus:g} CPU(s) free for each? (ray status)"
            ) from e
        except BaseException:
            if close_on_failure:
                self.close(grace_s=0)
            raise

    def revive(self) -> list[int]:
        """Replace the engines the router took out as dead (same names); return their indexes."""
        import ray

        dead = list(ray.get(self.router.stats.remote())["dead"])
        for i in dead:
            try:
                ray.kill(self.engines[i])
            except Exception:  # already gone
                pass
            self.engines[i] = self._engine(i)
        self._await_ready([self.engines[i] for i in dead], close_on_failure=False)
        for i in dead:
            ray.get(self.router.revive.remote(i))
        return dead

    def model_for(self, task_id: str) -> RoutedModel:
        """The Model every rollout of ``task_id`` uses."""
        return RoutedModel(self.name, task_id, self.router, self.engines)

    def stats(self) -> dict[str, Any]:
        """The router's counts (load, dead, home, spills) and each live engine's request and token counts."""
        import ray

        stats: dict[str, Any] = ray.get(self.router.stats.remote())
        per_engine: list[dict[str, Any] | None] = []
        for i, engine in enumerate(self.engines):
            try:
                per_engine.append(None if i in stats["dead"] else ray.get(engine.stats.remote(), timeout=60))
            except Exception:  # a dead or stuck engine has no counts to give
                per_engine.append(None)
        stats["engines"] = per_engine
        return stats

    def close(self, grace_s: float = 60.0) -> None:
        """Shut the engines down (vLLM's own processes too), then kill the engine and router actors; safe twice."""
        import ray

        try:
            if grace_s > 0 and self.engines:
                ray.get([e.shutdown.remote() for e in self.engines], timeout=grace_s)
        except Exception:  # a dead or stuck engine: the kill below is all that is left
            pass
        for actor in [*self.engines, self.router]:
            try:
                ray.kill(actor)
            except Exception:  # already gone
                pass
        self.engines = []
        if self.groups:
            from ray.util.placement_group import remove_placement_group

            for group in self.groups:
                try:
                    remove_placement_group(group)
                except Exception:  # the cluster is going away too
                    pass
            self.groups = []

    def __enter__(self) -> EnginePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
