"""The units of work that run on Ray workers: one function per unit (docs/architecture.md, "Conventions in the code").

Workers never write the run store (a worker node need not share the driver's disk): each unit returns
a record and the driver saves it. A unit catches broadly only at its own boundary, records the
exception class and traceback, and lets ``KeyboardInterrupt`` (``ray.cancel``) through after cleanup.
"""

from __future__ import annotations

import time
from typing import Any

from agentbon.config import RunConfig
from agentbon.errors import RolloutDeadline
from agentbon.orchestrate.deadline import Watchdog
from agentbon.orchestrate.factories import Factories
from agentbon.orchestrate.faults import Place, classify
from agentbon.orchestrate.shipping import Parcel, unpack
from agentbon.orchestrate.tracker import report_start
from agentbon.types import Record, Role, Rollout, RolloutSpec, Task, Timings, Verdict

_cache: dict[tuple[str, str], Any] = {}
_prepared: set[tuple[str, str]] = set()


def cached(kind: str, factory: Any, config: Any) -> Any:
    """One component per worker process and config (clients, engines, backends are reused across units)."""
    key = (f"{kind}:{getattr(factory, '__qualname__', factory)}", config.model_dump_json())
    if key not in _cache:
        _cache[key] = factory(config)
    return _cache[key]


def prepare_once(backend: Any, task: Task) -> None:
    """Make sure the task's environment exists on this node (once per worker process and task)."""
    key = (task.task_id, task.environment.model_dump_json())
    if key not in _prepared:
        backend.prepare(task)
        _prepared.add(key)


class RolloutOutcome(Record):
    """What a rollout unit hands back to the driver."""

    rollout: Rollout
    messages: list[dict[str, Any]] = []
    node_id: str = ""
    server_failure: bool = False
    """The model server failed: the driver restarts it before the retry."""


class TrackedModel:
    """Passes calls to the model and reports the tokens each call spent to the tracker (live tokens/s)."""

    def __init__(self, model: Any, tracker: Any):
        self._model, self._tracker = model, tracker
        self.name = model.name

    def chat(self, messages: Any, *, seed: int | None = None, **sampling: Any) -> Any:
        reply = self._model.chat(messages, seed=seed, **sampling)
        if self._tracker is not None:
            usage = reply.usage
            self._tracker.tokens.remote(usage.prompt_tokens + usage.completion_tokens, usage.completion_tokens)
        return reply

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


def run_rollout(
    item: Task | Parcel, spec: RolloutSpec, config: RunConfig, factories: Factories, tracker: Any
) -> RolloutOutcome:
    """Open a sandbox, run the agent, take the patch, close the sandbox; never raises (except on cancel).

    ``item``: the task, or on a cluster its parcel (what it needs from the driver's disk, orchestrate/shipping.py).
    """
    import ray

    report_start(tracker, f"rollout:{spec.rollout_id}:{spec.attempt}")
    t0 = time.time()
    labels = {"run": spec.run_id, "task": spec.task_id, "rollout": spec.rollout_id, "attempt": str(spec.attempt)}
    times: dict[str, Any] = {"setup_s": 0.0, "sandbox_s": 0.0, "model_s": 0.0}
    messages: list[dict[str, Any]] = []
    server = False
    place: Place = "prepare"  # where the rollout is: what it raises there is classified by it (orchestrate/faults.py)
    dog = Watchdog(config.deadline_s)
    try:
        with dog:
            task = unpack(item)
            backend = cached("backend", factories.backend, config.rollout_sandbox())
            if hasattr(backend, "keep_warm"):  # the run's end reaps by its label, so warm sandboxes may wait
                backend.keep_warm()
            prepare_once(backend, task)
            place = "model"
            model = cached("model", factories.model, config.model)
            if hasattr(model, "model_for"):  # an engine pool: all rollouts of a task go to one engine (prefix cache)
                model = model.model_for(spec.task_id)
            model = TrackedModel(model, tracker)
            agent = cached("agent", factories.agent, config.agent)
            place = "sandbox"
            opened = time.time()
            sandbox = backend.open(task, labels)
            times["setup_s"] = time.time() - opened
            dog.guard(sandbox)
            try:
                place = "agent"
                result = agent.run(task, sandbox, model, spec)
                messages = result.messages
                place = "diff"
                patch = sandbox.diff()
                place = "close"
            finally:  # on an exception the place stays where it was raised
                sandbox.close()
                times["sandbox_s"] = time.time() - opened
        if dog.fired:
            raise RolloutDeadline(f"rollout past its deadline of {config.deadline_s:.0f}s")
        times["model_s"] = result.model_s
        fields: dict[str, Any] = dict(
            status=result.status, exit_status=result.exit_status, patch=patch, steps=result.steps,
            malformed=result.malformed, unusable=result.unusable, usage=result.usage,
            isolation=getattr(sandbox, "isolation", "docker"),
        )
        if hasattr(sandbox, "use"):
            fields["sandbox"] = sandbox.use()
    except Exception as e:  # the rollout boundary: record, never raise
        # After the watchdog fired, whatever surfaced (SandboxGone, an agent error) is the deadline's doing.
        cause = RolloutDeadline(f"rollout past its deadline of {config.deadline_s:.0f}s") if dog.fired else e
        failure = classify(cause, place=place)
        server = failure.server
        fields = dict(
            status="infra_error" if failure.infra else failure.recorded_as, exit_status=failure.kind,
            error=failure.message if place == "agent" else f"{place}: {failure.message}", traceback=failure.traceback,
        )
    rollout = Rollout(
        run_id=spec.run_id, task_id=spec.task_id, index=spec.index, seed=spec.seed, attempt=spec.attempt,
        timings=Timings(started_at=t0, wall_s=time.time() - t0, **times), **fields,
    )
    node_id = ray.get_runtime_context().get_node_id()
    return RolloutOutcome(rollout=rollout, messages=messages, node_id=node_id, server_failure=server)


def run_verify(
    item: Task | Parcel, rollout: Rollout, roles: list[Role], config: RunConfig, factories: Factories, tracker: Any,
    attempt: int, budget_s: float,
) -> list[Verdict]:
    """Verify one candidate in each role, each within ``budget_s`` (verify/budget.py); failures become verdicts.

    When evidence and grade coincide the tests run once and the verdict is recorded in both roles.
    """
    report_start(tracker, f"verify:{rollout.rollout_id}:{attempt}")
    task = item.task if isinstance(item, Parcel) else item
    verifier = cached("verifier", factories.verifier, config)
    if hasattr(verifier, "with_labels"):  # its containers carry the unit's name: a dead unit's are reaped by it
        verifier = verifier.with_labels(rollout=rollout.rollout_id, attempt=f"verify-{attempt}")
    out: dict[Role, Verdict] = {}
    run_roles: list[Role] = ["grade"] if task.evidence_is_grade else list(roles)
    for role in run_roles:
        t0 = time.time()
        dog = Watchdog(budget_s)
        try:
            with dog:
                verdict = verifier.verify(unpack(item), rollout, role)
            if dog.fired:
                raise RolloutDeadline(f"past the verification's budget of {budget_s:.0f}s")
        except Exception as e:  # infra (engine gone, image missing) or a verifier bug: recorded, retried by the driver
            cause = RolloutDeadline(f"past the verification's budget of {budget_s:.0f}s") if dog.fired else e
            failure = classify(cause, place="verify")
            verdict = Verdict(
                run_id=rollout.run_id, task_id=rollout.task_id, rollout_id=rollout.rollout_id, role=role,
                status="infra_error", reason=f"{failure.kind}: {failure.message}", duration_s=time.time() - t0,
                log=failure.traceback[-4000:],
            )
        out[role] = verdict
    if task.evidence_is_grade:
        return [out["grade"].model_copy(update={"role": role}) for role in roles]
    return [out[role] for role in roles]


def run_prepare(item: Task | Parcel, config: RunConfig, factories: Factories) -> str:
    """Build or find the task's environment on this node (raises on failure; the driver classifies it)."""
    task = unpack(item)
    backend = cached("backend", factories.backend, config.sandbox)
    ref = backend.prepare(task)
    _prepared.add((task.task_id, task.environment.model_dump_json()))
    return str(ref)


def run_reap(config: RunConfig, factories: Factories, labels: dict[str, str]) -> int:
    """Remove this node's leftover sandboxes matching the labels."""
    backend = cached("backend", factories.backend, config.sandbox)
    return int(backend.reap(labels))
