"""Orchestration on Ray: plan N rollouts per task, run them in sandbox slots, verify, select, record.

``run_batch(tasks, config)`` is the entry point; ``Factories`` is the one seam where tests put fakes.
Modules: ``plan`` (what is left to do), ``workers`` (the units of work), ``driver`` + ``outcomes`` (the
loop and what it does with each result), ``early_stop``, ``selection``, ``cluster`` (joining Ray,
reaping), ``resume`` (which run a command means, what a resume must keep), ``tracker`` (start times and tokens from workers), ``faults`` (infra or model), ``deadline``.
"""

from agentbon.orchestrate.batch import RunResult, run_batch
from agentbon.orchestrate.factories import Factories, ModelService
from agentbon.orchestrate.plan import derive_seed, plan_run
from agentbon.orchestrate.resume import default_run_id, resolve_run_id

__all__ = [
    "Factories", "ModelService", "RunResult", "default_run_id", "derive_seed", "plan_run", "resolve_run_id", "run_batch",
]  # fmt: skip
