"""Training the classifier critic on run stores: task-grouped evaluation, saved format, scoring."""

import json

import numpy as np
import pytest
from critic_runs import make_run

from agentbon.critic import ClassifierCritic, LogisticModel, make_critic
from agentbon.critic.training import load_examples, task_folds, train
from agentbon.errors import ConfigError


def test_logistic_fit_orders_and_roundtrips(tmp_path):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] + 0.1 * rng.normal(size=200) > 0).astype(float)
    model = LogisticModel.fit(X, y, ["a", "b", "c"], text=False)
    p = model.predict(X)
    assert ((p > 0.5) == (y > 0.5)).mean() > 0.85 and abs(model.weights[0]) > abs(model.weights[1])
    again = LogisticModel.load(model.save(tmp_path / "out/"))
    assert np.allclose(again.predict(X), p)


def test_bad_critic_files_are_named(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"format": "agentbon-critic-logreg", "version": 99}))
    with pytest.raises(ConfigError, match="version 99"):
        LogisticModel.load(path)
    path.write_text("{}")
    with pytest.raises(ConfigError, match="not an agentbon critic"):
        LogisticModel.load(path)
    with pytest.raises(ConfigError, match="not a run directory"):
        load_examples([tmp_path])


def test_folds_split_by_task():
    folds = task_folds([f"t{i % 7}" for i in range(70)], folds=3, seed=1)
    assert len(folds) == 3 and set().union(*folds) == {f"t{i}" for i in range(7)}
    assert sum(len(f) for f in folds) == 7  # each task in exactly one fold


def test_train_reports_held_out_calibration_and_scores(run_dir, tmp_path):
    other = make_run(tmp_path / "run-b", tasks=4, seed=1).path
    model, report = train([run_dir, other], text=False, folds=4)
    held = report["held_out"]
    assert report["tasks"] == 12 and held["n"] == 12 * 6 and "grouped by task" in report["split"]
    assert held["auroc"] > 0.75 and 0 <= held["ece"] < 0.3
    assert held["auroc"] >= report["baseline_evidence_pass"]["auroc"] - 0.05
    critic = make_critic("classifier", path=model.save(tmp_path / "critic.json"))
    assert isinstance(critic, ClassifierCritic) and critic.model.report == report
    ex = load_examples([run_dir])
    good = [critic.score(e.task, e.rollout, e.evidence) for e in ex if e.label]
    bad = [critic.score(e.task, e.rollout, e.evidence) for e in ex if not e.label]
    assert np.mean(good) > np.mean(bad) and all(0.0 <= s <= 1.0 for s in good + bad)


def test_training_needs_two_tasks(tmp_path):
    with pytest.raises(ConfigError, match="at least 2 tasks"):
        train([make_run(tmp_path / "one", tasks=1).path], text=False)
