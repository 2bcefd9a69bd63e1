"""An ensemble eval: several systems' predictions graded as one best-of-N run, with the run's own report.

Each slot of the layout (``ensemble``) is written into the run store as a finished rollout before the driver plans
(``before_drive``), its event naming the system, file, model, sample and line it came from. A prediction gets no
verdict there: the driver verifies it in both roles, the selection evidence included (selection needs it; a task
without evidence tests gets ``undecided`` from the verifier, without a sandbox). A slot that is not run (no
prediction, an empty or whitespace-only patch) gets its verdicts with it: the grade ``fail`` (unresolved, as the
harness counts it) and the evidence ``undecided``. The selectors are then the run's, and the report is the run's
(``summary.json``, ``report.md``): coverage@k, selected@k, selection loss. Each rollout index is also written as the
harness's report of what that system (and sample) submitted, under ``systems/``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentbon.config import RunConfig, SelectConfig
from agentbon.errors import ConfigError
from agentbon.evaluate.ensemble import Ensemble, Slot, System, build_ensemble, ensemble_run_id
from agentbon.evaluate.report import REPORT, EvalReport, build_eval_report
from agentbon.evaluate.run import eval_config, exit_code, refuse_inert
from agentbon.evaluate.seed import EXIT_STATUS, held_otherwise, prediction_rollout, unfinished
from agentbon.evaluate.service import eval_factories
from agentbon.files import write_atomic
from agentbon.store import RunStore
from agentbon.types import Role, Task, Verdict, VerdictStatus, patch_hash

NO_PREDICTION = "NoPrediction"
"""``Rollout.exit_status`` of a slot its system gave no prediction for (an empty patch)."""
SYSTEMS = "systems.json"
"""The run directory's map of rollout index → system, sample, file and that system's eval report."""


def trajectory_free_selectors() -> list[str]:
    """The default selectors that read nothing a prediction lacks: none of those that read a critic, since the
    critics read the agent's trajectory (the judge) or its run (the classifier: steps, tokens), and a prediction
    made elsewhere has neither."""
    from agentbon.select import SELECTORS

    return [name for name in SelectConfig().selectors if not SELECTORS[name].uses_critic]


def ensemble_config(config: RunConfig, ensemble: Ensemble, tasks: list[Task]) -> RunConfig:
    """An eval's config (``eval_config``) with N = the ensemble's rollout indices and, unless the config names
    them, the selectors that need no trajectory."""
    models = list(dict.fromkeys(s.model for s in ensemble.systems))
    name = "+".join(models) if len(models) <= 4 else f"{'+'.join(models[:4])}+{len(models) - 4} more"
    named = "selectors" in config.select.model_fields_set
    config = eval_config(config, name, tasks)
    select = config.select if named else config.select.model_copy(update={"selectors": trajectory_free_selectors()})
    return config.model_copy(update={"n": ensemble.n, "select": select})


def not_run(slot: Slot) -> str | None:
    """Why a slot is graded without running anything (None: its patch is verified)."""
    p = slot.prediction
    if p is None:
        return f"no prediction of {slot.system.name} (sample {slot.sample}): an empty patch, unresolved as the harness counts it"
    if p.empty:
        return "empty patch: not run, unresolved (the harness: an empty-patch instance)"
    if p.blank:
        return "the patch is whitespace only: no way applies it, unresolved (the harness: an error instance)"
    return None


def conflicts(store: RunStore, ensemble: Ensemble) -> list[str]:
    """Each slot whose rollout the run already holds with another patch, named by file and line."""
    slots = ((f"{tid}/{s.index}", s.patch, (tid, s)) for tid, slots in ensemble.slots.items() for s in slots)
    out = []
    for tid, s in held_otherwise(store, slots):
        where = f"{s.system.file}:{s.prediction.line}" if s.prediction else f"{s.system.name} (none)"
        out.append(f"{where}: {tid!r}: rollout {tid}/{s.index} of run {store.run_id} holds another patch")
    return out


@dataclass
class EnsembleSeeder:
    """The ``run_batch`` hook that writes every slot's rollout (and a not-run slot's verdicts) under the run's lock."""

    run_id: str
    ensemble: Ensemble
    written: int = 0

    def __call__(self, store: RunStore) -> None:
        changed = conflicts(store, self.ensemble)
        if changed:  # written by another process since the check: nothing is written
            raise ConfigError(f"{store.path}: " + "; ".join(changed))
        recorded, grades, evidence = store.rollouts(), store.verdicts("grade"), store.verdicts("evidence")
        for tid, slots in self.ensemble.slots.items():
            for slot in slots:
                rollout = recorded.get(f"{tid}/{slot.index}")
                if rollout is None or not rollout.finished:
                    rollout = prediction_rollout(
                        self.run_id, tid, slot.patch, slot.index, EXIT_STATUS if slot.prediction else NO_PREDICTION
                    )
                    store.append("rollout", rollout, source=slot.source)  # the event alone: the patch stored once
                    self.written += 1
                why = not_run(slot)
                if why is None:
                    continue
                applies = slot.prediction is None or not slot.prediction.blank
                pairs: tuple[tuple[Role, VerdictStatus, dict[str, Verdict]], ...] = (
                    ("grade", "fail", grades), ("evidence", "undecided", evidence)
                )
                for role, status, held in pairs:
                    if rollout.rollout_id not in held:
                        store.save_verdict(Verdict(
                            run_id=self.run_id, task_id=tid, rollout_id=rollout.rollout_id, role=role, status=status,
                            patch_hash=patch_hash(rollout.patch), patch_applied=applies, reason=why,
                        ))  # fmt: skip


@dataclass
class SystemResult:
    """One rollout index: its system and sample, and the harness's report of what it submitted."""

    index: int
    system: System
    sample: int
    report: EvalReport
    path: Path


@dataclass
class EnsembleResult:
    """What one ensemble invocation did."""

    run_id: str
    path: Path
    ensemble: Ensemble
    systems: list[SystemResult] = field(default_factory=list)
    batch: Any = None
    """The ``RunResult`` of the batch, or None when nothing was left to do."""
    summary: Any = None
    """The run's report (``RunReport``), None where no report was written."""
    recorded: int = 0
    """Rollouts this invocation wrote (the others were there from an earlier one)."""

    @property
    def interrupted(self) -> bool:
        return bool(self.batch and self.batch.interrupted)

    @property
    def exit_code(self) -> int:
        """``exit_code`` of what was not graded or selected (infrastructure: run again) and of predictions for tasks
        that did not load (left out)."""
        left = any(s.report.retry_ids for s in self.systems) or bool(self.batch and self.batch.infra_left.total)
        return exit_code(self.batch, left, any(self.ensemble.unloaded))


def evaluate_ensemble(
    tasks: list[Task], files: list[str | Path], config: RunConfig, *, suite: str = "suite", factories: Any = None,
    emit: Any = None, unloaded: dict[str, str] | None = None,
) -> EnsembleResult:
    """Grade every system's predictions as rollouts of one run, select, and write the run's report and one harness
    report per rollout index. Raises ``ConfigError`` (an unusable entry, a changed prediction, a failed preflight)
    before anything is graded."""
    from agentbon.orchestrate import Factories, run_batch

    refuse_inert(config)
    ensemble = build_ensemble(files, tasks, suite=suite, unloaded=unloaded)
    run_tasks = [t for t in tasks if t.task_id in ensemble.slots]
    if not run_tasks:
        raise ConfigError(f"no prediction of any system is for a task of {suite} that loaded: nothing to grade")
    config = ensemble_config(config, ensemble, run_tasks)
    run_id = config.run_id or ensemble_run_id(suite, ensemble, run_tasks)
    config = config.model_copy(update={"run_id": run_id})
    store = RunStore(Path(config.run_dir) / run_id)
    changed = conflicts(store, ensemble)
    if changed:
        raise ConfigError(
            f"run {run_id} already holds other patches ({len(changed)}); use another --run-id to grade these:\n  "
            + "\n  ".join(changed[:50])
        )
    result = EnsembleResult(run_id=run_id, path=store.path, ensemble=ensemble)
    factories = eval_factories(factories or Factories(), report=True)
    if _left(store, ensemble, config):
        seeder = EnsembleSeeder(run_id, ensemble)
        result.batch = run_batch(run_tasks, config, suite=suite, factories=factories, emit=emit, before_drive=seeder)
        result.recorded, result.summary = seeder.written, result.batch.report
    else:  # a resume of a finished ensemble: no Ray, no sandboxes, only the reports again
        result.summary = factories.report(store)
    result.systems = system_reports(store, ensemble, tasks, unloaded)
    return result


def _left(store: RunStore, ensemble: Ensemble, config: RunConfig) -> bool:
    """Whether the driver has anything to do: a rollout, a usable verdict or a selection missing, or no report."""
    ids = [f"{tid}/{slot.index}" for tid, slots in ensemble.slots.items() for slot in slots]
    if not (store.path / "summary.json").exists() or unfinished(store, ids):
        return True
    standing = {(s.task_id, s.selector) for s in store.standing_selections()}
    return any((tid, name) not in standing for tid in ensemble.slots for name in config.select.selectors)


def system_reports(
    store: RunStore, ensemble: Ensemble, tasks: list[Task], unloaded: dict[str, str] | None
) -> list[SystemResult]:
    """Write, per rollout index, the harness's report of its system's (sample's) predictions, and ``systems.json``."""
    from agentbon.orchestrate.resume import run_name

    out, index_rows = [], []
    for index, (system, sample) in enumerate(ensemble.columns()):
        report = build_eval_report(store, ensemble.matched(index), tasks, [], system.file, unloaded)
        slug = run_name(system.model, 60) or "model"
        path = report.write(store.path / "systems" / f"{index}-{slug}" / REPORT)
        out.append(SystemResult(index=index, system=system, sample=sample, report=report, path=path))
        index_rows.append({"index": index, "system": system.name, "file": system.file, "model": system.model,
                           "sample": sample, "eval_report": str(path.relative_to(store.path)),
                           "submitted": report.submitted_instances, "resolved": report.resolved_instances})  # fmt: skip
    write_atomic(store.path / SYSTEMS, json.dumps(index_rows, indent=2) + "\n")
    return out
