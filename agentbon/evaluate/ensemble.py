"""Predictions of several systems as one best-of-N run: which prediction is rollout ``i`` of which instance.

A *system* is one ``model_name_or_path`` of one predictions file: the files in the order given, and within a file
its models in the order each first appears. Within a system, the ``j``-th prediction of an instance id (file
order) is its sample ``j`` (seeds of one system, or reruns): nothing is dropped, unlike the harness's "last one
counts" of a one-model eval. A system takes as many rollout indices as its most-predicted id has predictions, and
the systems follow one another: rollout ``i`` of every instance comes from the same system and sample, and the
same inputs give the same layout (the resume's rollout ids).

An instance a system has no prediction for (or fewer samples of than its width) is that system's empty patch
there: unresolved, as the harness counts a missing prediction. The run's tasks are the suite's instances that at
least one system predicted; an instance no system predicted is left out of the run (it would add only empty
patches) and named. Any entry that cannot be used (not JSON, a missing key, an id not in the suite) refuses the
whole ensemble before anything runs: dropping it would silently turn it into an empty patch of its system.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from agentbon.errors import ConfigError
from agentbon.evaluate.match import Matched, models_of
from agentbon.evaluate.predictions import InputError, Prediction, read_predictions
from agentbon.types import Task, patch_hash


class EnsembleInputError(ConfigError):
    """Entries of the predictions files that an ensemble cannot use; nothing is graded."""

    def __init__(self, errors: list[InputError]):
        self.errors = errors
        shown = "\n".join(f"  {e}" for e in errors[:50]) + (f"\n  and {len(errors) - 50} more" if len(errors) > 50 else "")
        super().__init__(
            f"{len(errors)} entr{'y' if len(errors) == 1 else 'ies'} of the predictions cannot be used in an ensemble "
            f"(each would count as an empty patch of its system); nothing was graded:\n{shown}"
        )


@dataclass(frozen=True)
class System:
    """One model of one predictions file, and the rollout indices its samples take."""

    file: str
    model: str
    first: int
    """Its first rollout index."""
    width: int
    """Indices it takes: the most predictions it holds for one instance id."""

    @property
    def name(self) -> str:
        return f"{self.file}:{self.model}"


@dataclass(frozen=True)
class Slot:
    """Rollout ``index`` of one instance: which system and sample it is, and its prediction (None: none given)."""

    index: int
    system: System
    sample: int
    prediction: Prediction | None

    @property
    def patch(self) -> str:
        return self.prediction.model_patch if self.prediction is not None else ""

    @property
    def source(self) -> dict[str, object]:
        """Where the rollout came from, as its event records it."""
        p = self.prediction
        return {"system": self.system.name, "file": self.system.file, "model": self.system.model,
                "sample": self.sample, "line": p.line if p is not None else None}  # fmt: skip


@dataclass
class Ensemble:
    """Every system and, per instance of the run, one slot per rollout index."""

    systems: list[System]
    slots: dict[str, list[Slot]] = field(default_factory=dict)
    """Task id → its slots, index order (``n`` each)."""
    not_predicted: list[str] = field(default_factory=list)
    """Tasks of the suite that no system predicted: not in the run."""
    unloaded: list[dict[str, list[Prediction]]] = field(default_factory=list)
    """Per system (``systems`` order): its predictions for records of the suite that did not load, by id; not in
    the run, and error instances of its eval report (``task_not_loaded``), as in a one-model eval."""

    @property
    def n(self) -> int:
        return sum(s.width for s in self.systems)

    def columns(self) -> list[tuple[System, int]]:
        """(system, sample) of each rollout index, in index order."""
        return [(s, j) for s in self.systems for j in range(s.width)]

    def matched(self, index: int) -> Matched:
        """Rollout ``index`` of every instance as one harness-style eval: what that system's sample submitted."""
        system, sample = self.columns()[index]
        out = Matched(model=system.model, index=index)
        for tid, predictions in sorted(self.unloaded[self.systems.index(system)].items()):
            if len(predictions) > sample:
                out.unloaded[tid] = predictions[sample]
        for tid, slots in sorted(self.slots.items()):
            p = slots[index].prediction
            if p is not None:
                bucket = out.empty if p.empty else out.blank if p.blank else out.graded
                bucket[tid] = p
        return out

    def digest(self) -> str:
        """A hash of the layout: every system and every slot's patch (the same inputs, the same run)."""
        h = hashlib.sha256()
        for s in self.systems:
            h.update(f"{s.name}\0{s.first}\0{s.width}\n".encode())
        for tid, slots in sorted(self.slots.items()):
            for slot in slots:
                h.update(f"{tid}\0{slot.index}\0{slot.prediction is not None}\0{patch_hash(slot.patch)}\n".encode())
        return h.hexdigest()


def build_ensemble(
    files: list[str | Path], tasks: list[Task], *, suite: str = "the suite", unloaded: dict[str, str] | None = None
) -> Ensemble:
    """Read every file and lay the systems out; raise ``EnsembleInputError`` naming each entry that cannot be used
    (``PredictionsFileError`` for a file that cannot be read at all)."""
    names = [str(f) for f in files]
    twice = sorted({f for f in names if names.count(f) > 1})
    if twice:
        raise ConfigError(f"predictions file given more than once: {', '.join(twice)} (one system each)")
    known = {t.task_id for t in tasks}
    not_loaded = set(unloaded or {}) - known
    errors: list[InputError] = []
    systems: list[System] = []
    by_system: list[dict[str, list[Prediction]]] = []
    out = Ensemble(systems=systems)
    for file in names:
        predictions, bad = read_predictions(file)
        errors += bad
        for model in models_of(predictions):
            per_id: dict[str, list[Prediction]] = {}
            elsewhere: dict[str, list[Prediction]] = {}
            for p in predictions:
                if p.model_name_or_path != model:
                    continue
                if p.instance_id in not_loaded:
                    elsewhere.setdefault(p.instance_id, []).append(p)
                elif p.instance_id not in known:
                    errors.append(InputError(file=file, line=p.line, key="instance_id", instance_id=p.instance_id,
                                             problem=f"{p.instance_id!r} is not a task of {suite}"))  # fmt: skip
                else:
                    per_id.setdefault(p.instance_id, []).append(p)
            width = max((len(ps) for ps in per_id.values()), default=1)
            systems.append(System(file=file, model=model, first=sum(s.width for s in systems), width=width))
            by_system.append(per_id)
            out.unloaded.append(elsewhere)
    if errors:
        raise EnsembleInputError(sorted(errors, key=lambda e: (e.file, e.line or 0)))
    predicted = {tid for per_id in by_system for tid in per_id}
    for task in tasks:
        if task.task_id not in predicted:
            out.not_predicted.append(task.task_id)
            continue
        out.slots[task.task_id] = [
            Slot(index=s.first + j, system=s, sample=j, prediction=_nth(per_id.get(task.task_id, []), j))
            for s, per_id in zip(systems, by_system, strict=True)
            for j in range(s.width)
        ]
    return out


def _nth(predictions: list[Prediction], j: int) -> Prediction | None:
    return predictions[j] if j < len(predictions) else None


def ensemble_run_id(suite: str, ensemble: Ensemble, tasks: list[Task]) -> str:
    """``eval-<suite>-ensemble-<systems>x<n>-<hash of the suite's task ids and the layout>``."""
    from agentbon.orchestrate.resume import run_name, suite_digest

    digest = hashlib.sha256(f"{suite_digest(tasks)}\0{ensemble.digest()}".encode()).hexdigest()[:8]
    return f"{run_name(f'eval-{Path(suite).stem}-ensemble-{len(ensemble.systems)}x{ensemble.n}', 150)}-{digest}"
