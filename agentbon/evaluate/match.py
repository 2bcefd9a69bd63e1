"""Predictions against a suite: which are graded, which are empty, and an error for each that cannot be.

Rules (the harness's where it has one): an id that is not a task of the suite is an error; a second
prediction for an id already seen is an error (the first one is graded, whatever the later ones say); an
empty patch is an empty-patch instance, not graded; predictions of several models in one file are refused
unless one model is picked (``model``): a run grades one model, like one harness report.
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
    """Predictions sorted by what happens to them."""

    graded: dict[str, Prediction] = field(default_factory=dict)
    """Predictions to grade, by task id."""
    empty: dict[str, Prediction] = field(default_factory=dict)
    """Predictions with an empty patch (``empty_patch_ids``), by task id."""
    errors: list[InputError] = field(default_factory=list)
    """Entries that are not graded, one per line."""
    model: str = ""
    """The model whose predictions these are."""

    @property
    def submitted(self) -> dict[str, Prediction]:
        """Every valid prediction (graded or empty), by task id."""
        return {**self.graded, **self.empty}


def models_of(predictions: list[Prediction]) -> list[str]:
    """The distinct ``model_name_or_path`` values, in order of first appearance."""
    return list(dict.fromkeys(p.model_name_or_path for p in predictions))


def match(
    predictions: list[Prediction], tasks: list[Task], file: str, *, model: str | None = None, suite: str = "the suite"
) -> Matched:
    """Sort ``predictions`` against the suite's ``tasks``; raise ``SeveralModels`` when no single model is picked."""
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
    first: dict[str, int] = {}
    for p in predictions:
        if p.model_name_or_path != out.model:
            continue
        if p.instance_id not in known:
            out.errors.append(
                InputError(
                    file=file, line=p.line, key="instance_id", instance_id=p.instance_id,
                    problem=f"{p.instance_id!r} is not a task of {suite}",
                )
            )
        elif p.instance_id in first:
            out.errors.append(
                InputError(
                    file=file, line=p.line, key="instance_id", instance_id=p.instance_id,
                    problem=f"duplicate {p.instance_id!r} (first on line {first[p.instance_id]}, which is graded)",
                )
            )
        else:
            first[p.instance_id] = p.line
            (out.empty if p.empty else out.graded)[p.instance_id] = p
    return out
