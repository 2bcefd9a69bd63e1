"""``select.critic: auto`` (the default): a trained critic only where labelled rollouts exist and it earns its place.

The labelled rollouts are those of the earlier runs in the same run directory (last night's batch, say): their
grades never come from the run being selected, so no selection sees its own answers. The ``RECENT`` most recent
runs are read. Where they hold graded rollouts of at least two tasks and of both outcomes, ``agentbon critic
train``'s classifier (record-only features) is scored out of fold, grouped by task, and used only when its AUROC
beats the plain evidence result's on the same rollouts; otherwise, or where there is nothing to learn from, the
heuristic prior, named as such. Either way the choice and why are written to the run directory
(``critic_choice.json``), which the report reads (report/calibration.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from agentbon.critic.calibration import auroc
from agentbon.critic.prior import HeuristicPrior
from agentbon.files import write_atomic
from agentbon.protocols import Critic

RECENT = 5
"""Earlier runs read for labelled rollouts (the most recent by their event log's time)."""
CHOICE_FILE = "critic_choice.json"
_chosen: dict[str, tuple[Critic, dict[str, Any]]] = {}


def earlier_runs(run_dir: Path, run_id: str) -> list[Path]:
    """The other runs in ``run_dir`` (most recent first, at most ``RECENT``)."""
    if not run_dir.is_dir():
        return []
    runs = [p for p in run_dir.iterdir() if p.name != run_id and (p / "events.jsonl").is_file()]
    return sorted(runs, key=lambda p: (p / "events.jsonl").stat().st_mtime, reverse=True)[:RECENT]


def choose(run_dir: Path, run_id: str, seed: int = 0) -> tuple[Critic, dict[str, Any]]:
    """The critic for a run and why (cached per run: every selector of the run gets the same one)."""
    key = str(run_dir / run_id)
    if key not in _chosen:
        _chosen[key] = _choose(run_dir, run_id, seed)
    if not (run_dir / run_id / CHOICE_FILE).exists():  # the run's directory exists once the run has started
        _write(run_dir / run_id, _chosen[key][1])
    return _chosen[key]


def _choose(run_dir: Path, run_id: str, seed: int) -> tuple[Critic, dict[str, Any]]:
    from agentbon.critic.classifier import ClassifierCritic, LogisticModel
    from agentbon.critic.training import featurize, load_examples, out_of_fold

    runs = earlier_runs(run_dir, run_id)
    prior = HeuristicPrior()
    if not runs:
        return prior, _why("heuristic-prior", "no earlier run in the run directory to learn from")
    examples = load_examples(runs)
    tasks = {e.task.task_id for e in examples}
    labels = np.asarray([e.label for e in examples])
    if len(tasks) < 2 or labels.size == 0 or labels.min() == labels.max():
        return prior, _why(
            "heuristic-prior",
            f"{len(examples)} graded rollout(s) of {len(tasks)} task(s) in {len(runs)} earlier run(s): out-of-fold "
            "scoring needs two tasks and both outcomes",
        )
    X, names = featurize(examples, text=False)
    ids = [e.task.task_id for e in examples]
    oof = out_of_fold(X, labels, ids, names, False, 1.0, 5, seed)
    baseline = np.asarray([float(e.evidence is not None and e.evidence.status == "pass") for e in examples])
    trained, plain = auroc(labels, oof), auroc(labels, baseline)
    figures = {"runs": [p.name for p in runs], "rollouts": len(examples), "tasks": len(tasks),
               "auroc_out_of_fold": trained, "auroc_evidence": plain}  # fmt: skip
    if trained is None or plain is None or trained <= plain:
        return prior, _why(
            "heuristic-prior",
            f"a classifier trained on {len(examples)} graded rollouts of {len(runs)} earlier run(s) does not beat the "
            f"evidence result out of fold (AUROC {_f(trained)} against {_f(plain)})",
            figures,
        )
    model = LogisticModel.fit(X, labels, names, False, 1.0)
    return ClassifierCritic(model), _why(
        "classifier",
        f"trained on {len(examples)} graded rollouts of {len(runs)} earlier run(s); out of fold it beats the evidence "
        f"result (AUROC {_f(trained)} against {_f(plain)})",
        figures,
    )


def _f(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.3f}"


def _why(name: str, why: str, figures: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"critic": name, "why": why, **(figures or {})}


def _write(path: Path, choice: dict[str, Any]) -> None:
    if path.is_dir():
        write_atomic(path / CHOICE_FILE, json.dumps(choice, indent=1) + "\n")


def recorded_choice(run_path: Path) -> dict[str, Any] | None:
    """What ``choose`` decided for a run (None where it did not run: another ``select.critic``)."""
    try:
        data = json.loads((run_path / CHOICE_FILE).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
