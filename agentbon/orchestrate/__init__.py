"""Orchestration on Ray: plan N rollouts per task, run them in sandbox slots, verify, select, record.

``run_batch(tasks, config)`` is the entry point; ``Factories`` is the one seam where tests put fakes.
Modules: ``plan`` (what is left to do), ``workers`` (the units of work), ``driver`` + ``outcomes`` (the
loop and what it does with each result), ``early_stop``, ``selection``, ``cluster`` (joining Ray,
reaping), ``tracker`` (start times and tokens from workers), ``faults`` (infra or model), ``deadline``.
"""

from agentbon.orchestrate.batch import RunResult, default_run_id, run_batch
from agentbon.orchestrate.factories import Factories, ModelService
from agentbon.orchestrate.plan import derive_seed, plan_run

__all__ = ["Factories", "ModelService", "RunResult", "default_run_id", "derive_seed", "plan_run", "run_batch"]
