"""Predictions against a suite: which are graded, which are empty, and an error for each that cannot be.

Rules (the harness's, ``swebench.harness.run_evaluation``, where it has one): the last prediction of an id is the
one graded, as the harness keeps the last (each earlier one is listed as an input error naming the line graded);
an empty patch (``""`` or null) is an empty-patch instance, not graded; a whitespace-only patch is an error
instance (the harness tries to apply it and no way applies); a prediction for a record of the suite that did not
load is an error instance (the harness would grade it; agentbon cannot). Where agentbon differs: an id that is not
in the suite at all is an input error and the rest is graded (the harness refuses the whole file); predictions of
several models in one file are refused unless one model is picked (``model``): a run grades one model, like one
harness report.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentbon.errors import ConfigError
from agentbon.evaluate.predictions import InputError, Prediction
from agentbon.types import Task


class SeveralModels(ConfigError):
    """The file holds predictions of more than one model and none was picked."""


@dataclass
class Matched:
    """Predictions sorted by what happens to them, each by task id."""

    graded: dict[str, Prediction] = field(default_factory=dict)
    """Predictions to grade."""
    empty: dict[str, Prediction] = field(default_factory=dict)
    """Predictions with no patch (``empty_patch_ids``)."""
    blank: dict[str, Prediction] = field(default_factory=dict)
    """Whitespace-only patches: no way applies them (``error_ids``), so none is run."""
    unloaded: dict[str, Prediction] = field(default_factory=dict)
    """Predictions for records of the suite that did not load (``error_ids``, the load error as the reason)."""
    errors: list[InputError] = field(default_factory=list)
    """Entries that are not graded, one per line."""
    model: str = ""
    """The model whose predictions these are."""
    index: int = 0
    """The rollout index its graded predictions have in the run (0; an ensemble's system takes others)."""

    @property
    def submitted(self) -> dict[str, Prediction]:
        """Every prediction counted in the report (``submitted_ids``)."""
        return {**self.graded, **self.empty, **self.blank, **self.unloaded}


def models_of(predictions: list[Prediction]) -> list[str]:
    """The distinct ``model_name_or_path`` values, in order of first appearance."""
    return list(dict.fromkeys(p.model_name_or_path for p in predictions))


def match(
    predictions: list[Prediction], tasks: list[Task], file: str, *, model: str | None = None, suite: str = "the suite",
    unloaded: dict[str, str] | None = None,
) -> Matched:
    """Sort ``predictions`` against the suite's ``tasks`` (and ``unloaded``: ids of its records that did not load,
    with why); raise ``SeveralModels`` when no single model is picked."""
    models = models_of(predictions)
    if model is None and len(models) > 1:
        counts = {m: sum(p.model_name_or_path == m for p in predictions) for m in models}
        listed = ", ".join(f"{m!r} ({n})" for m, n in counts.items())
        raise SeveralModels(
            f"{file}: predictions of {len(models)} models ({listed}); a run grades one model: "
            f"pass --model NAME (once per model, each gets its own run), or split the file"
        )
    if model is not None and model not in models:
        raise ConfigError(f"--model {model!r}: no prediction of that model in {file} (models: {', '.join(models)})")
    out = Matched(model=model or (models[0] if models else ""))
    known = {t.task_id for t in tasks}
    unloaded = {tid: why for tid, why in (unloaded or {}).items() if tid not in known}
    mine = [p for p in predictions if p.model_name_or_path == out.model]
    last = {p.instance_id: i for i, p in enumerate(mine)}  # the harness keeps the last prediction of an id
    for i, p in enumerate(mine):
        if p.instance_id not in known and p.instance_id not in unloaded:
            problem = f"{p.instance_id!r} is not a task of {suite}"
        elif i != last[p.instance_id]:
            graded = mine[last[p.instance_id]].line
            problem = f"duplicate {p.instance_id!r}: the one on line {graded} is graded (the harness keeps the last)"
        else:
            bucket = out.unloaded if p.instance_id in unloaded else out.empty if p.empty else out.blank if p.blank else out.graded
            bucket[p.instance_id] = p
            continue
        out.errors.append(InputError(file=file, line=p.line, key="instance_id", instance_id=p.instance_id, problem=problem))
    return out
