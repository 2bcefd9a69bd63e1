"""Train the classifier critic on run stores and report its calibration on held-out tasks."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentbon.critic import calibration
from agentbon.critic.classifier import LogisticModel
from agentbon.critic.features import EMBED_DIM, NUMERIC_NAMES, numeric_features, text_features
from agentbon.errors import ConfigError
from agentbon.store import RunStore
from agentbon.types import Rollout, Task, Verdict


@dataclass
class Example:
    """A graded rollout: what a critic sees, and whether the grade resolved it."""

    task: Task
    rollout: Rollout
    evidence: Verdict | None
    label: int


def load_examples(run_dirs: Sequence[str | Path]) -> list[Example]:
    """Every rollout with a decided grade verdict (pass/fail) in the given run directories."""
    out: list[Example] = []
    for run_dir in run_dirs:
        store = RunStore(run_dir)
        if not (store.path / "events.jsonl").exists():
            raise ConfigError(f"{run_dir}: not a run directory (no events.jsonl)")
        tasks = {t.task_id: t for t in store.definitions()}  # tasks a resume left out are examples all the same
        evidence, grade = store.verdicts("evidence"), store.verdicts("grade")
        for rid, rollout in store.rollouts().items():
            verdict = grade.get(rid)
            if rollout.task_id not in tasks or verdict is None or not verdict.decided:
                continue
            if not rollout.finished:
                continue
            out.append(Example(tasks[rollout.task_id], rollout, evidence.get(rid), int(verdict.status == "pass")))
    return out


def featurize(examples: Sequence[Example], text: bool) -> tuple[np.ndarray, list[str]]:
    """The feature matrix of the examples and the column names."""
    X = np.vstack([numeric_features(e.task, e.rollout, e.evidence) for e in examples])
    names = list(NUMERIC_NAMES)
    if text:
        T = text_features([e.task.problem_statement for e in examples], [e.rollout.patch for e in examples])
        X = np.hstack([X, T])
        names += ["text_cosine", *(f"text_{i}" for i in range(EMBED_DIM))]
    return X, names


def task_folds(task_ids: Sequence[str], folds: int, seed: int) -> list[set[str]]:
    """Tasks shuffled with the seed and dealt into folds (each task in exactly one)."""
    unique = sorted(set(task_ids))
    order = np.random.default_rng(seed).permutation(len(unique))
    k = max(2, min(folds, len(unique)))
    return [{unique[i] for i in part} for part in np.array_split(order, k)]


def out_of_fold(
    X: np.ndarray,
    y: np.ndarray,
    task_ids: Sequence[str],
    names: list[str],
    text: bool,
    l2: float,
    folds: int,
    seed: int,
) -> np.ndarray:
    """Each rollout's probability from a model that never saw its task (folds grouped by task)."""
    oof = np.zeros(len(y))
    for held in task_folds(task_ids, folds, seed):
        test = np.asarray([t in held for t in task_ids])
        train_y = y[~test]
        if len(set(train_y.tolist())) < 2:  # one class left: the best a model can say is the base rate
            oof[test] = train_y.mean() if len(train_y) else 0.5
            continue
        oof[test] = LogisticModel.fit(X[~test], train_y, names, text, l2).predict(X[test])
    return oof


def train(
    run_dirs: Sequence[str | Path], text: bool = True, l2: float = 1.0, folds: int = 5, seed: int = 0
) -> tuple[LogisticModel, dict[str, Any]]:
    """Out-of-fold evaluation grouped by task, then a fit on everything; returns the model and the report."""
    examples = load_examples(run_dirs)
    if not examples:
        raise ConfigError(f"no graded rollouts in {', '.join(map(str, run_dirs))}")
    task_ids = [e.task.task_id for e in examples]
    if len(set(task_ids)) < 2:
        raise ConfigError("held-out evaluation needs graded rollouts from at least 2 tasks")
    X, names = featurize(examples, text)
    y = np.asarray([e.label for e in examples])
    oof = out_of_fold(X, y, task_ids, names, text, l2, folds, seed)
    evidence_pass = np.asarray([float(e.evidence is not None and e.evidence.status == "pass") for e in examples])
    report: dict[str, Any] = {
        "runs": [str(d) for d in run_dirs],
        "tasks": len(set(task_ids)),
        "split": f"{min(folds, len(set(task_ids)))}-fold, grouped by task (held-out tasks)",
        "text_features": text,
        "l2": l2,
        "seed": seed,
        "held_out": calibration.report(y, oof),
        "baseline_evidence_pass": calibration.report(y, evidence_pass),
    }
    model = LogisticModel.fit(X, y, names, text, l2)
    model.report = report
    return model, report
