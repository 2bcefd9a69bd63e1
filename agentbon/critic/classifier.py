"""The trained critic: L2-regularised logistic regression (numpy, Newton's method) on rollout features.

Trained on graded rollouts from run stores (label: the grade verdict passed), evaluated with folds
split by TASK (no task is in both the training and the evaluation part of a fold), then refit on
everything and saved as JSON with a format version and the evaluation report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agentbon.errors import ConfigError
from agentbon.files import write_atomic
from agentbon.types import Rollout, Task, Verdict

FORMAT = "agentbon-critic-logreg"
FORMAT_VERSION = 1


@dataclass
class LogisticModel:
    """Standardised features → probability of being correct."""

    names: list[str]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    l2: float
    text: bool
    """Whether the features include text embeddings (the critic extra is then needed to score)."""
    report: dict[str, Any] | None = None

    @classmethod
    def fit(cls, X: np.ndarray, y: np.ndarray, names: list[str], text: bool, l2: float = 1.0) -> LogisticModel:
        """Fit by Newton's method on standardised features (the bias is not penalised)."""
        y = np.asarray(y, dtype=np.float64)
        if len(set(y.tolist())) < 2:
            raise ValueError("training needs both resolved and unresolved rollouts")
        mean = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[scale < 1e-9] = 1.0
        Z = np.hstack([(X - mean) / scale, np.ones((len(X), 1))])
        w = np.zeros(Z.shape[1])
        penalty = np.full(Z.shape[1], l2)
        penalty[-1] = 0.0
        for _ in range(100):
            p = _sigmoid(Z @ w)
            grad = Z.T @ (p - y) + penalty * w
            hess = (Z * (p * (1 - p))[:, None]).T @ Z + np.diag(penalty + 1e-9)
            step = np.linalg.solve(hess, grad)
            w -= step
            if np.max(np.abs(step)) < 1e-8:
                break
        return cls(names=names, mean=mean, scale=scale, weights=w[:-1], bias=float(w[-1]), l2=l2, text=text)

    def predict(self, X: np.ndarray) -> np.ndarray:
        """Probabilities of being correct, one per row."""
        return _sigmoid(((np.atleast_2d(X) - self.mean) / self.scale) @ self.weights + self.bias)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "names": self.names,
            "mean": self.mean.tolist(),
            "scale": self.scale.tolist(),
            "weights": self.weights.tolist(),
            "bias": self.bias,
            "l2": self.l2,
            "text": self.text,
            "report": self.report,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any], source: str = "critic") -> LogisticModel:
        if data.get("format") != FORMAT:
            raise ConfigError(f"{source}: not an agentbon critic (format {data.get('format')!r})")
        if data.get("version") != FORMAT_VERSION:
            raise ConfigError(
                f"{source}: critic format version {data.get('version')} (this agentbon reads {FORMAT_VERSION})"
            )
        arrays = {k: np.asarray(data[k], dtype=np.float64) for k in ("mean", "scale", "weights")}
        if not len(arrays["mean"]) == len(arrays["scale"]) == len(arrays["weights"]) == len(data["names"]):
            raise ConfigError(f"{source}: weights, scales and feature names differ in length")
        return cls(
            names=list(data["names"]),
            bias=float(data["bias"]),
            l2=float(data["l2"]),
            text=bool(data["text"]),
            report=data.get("report"),
            **arrays,
        )

    def save(self, path: str | Path) -> Path:
        """Write the model (``path`` may be a directory: ``critic.json`` inside it)."""
        path = Path(path)
        if path.is_dir() or str(path).endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            path = path / "critic.json"
        return write_atomic(path, json.dumps(self.to_json(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> LogisticModel:
        path = Path(path)
        if path.is_dir():
            path = path / "critic.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise ConfigError(f"{path}: cannot read critic: {e}") from e
        return cls.from_json(data, str(path))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


class ClassifierCritic:
    """protocols.Critic over a trained ``LogisticModel``."""

    name = "classifier"

    def __init__(self, model: LogisticModel | str | Path):
        self.model = model if isinstance(model, LogisticModel) else LogisticModel.load(model)

    def features(self, task: Task, rollout: Rollout, evidence: Verdict | None) -> np.ndarray:
        from agentbon.critic.features import numeric_features, text_features

        row = numeric_features(task, rollout, evidence)
        if self.model.text:
            row = np.concatenate([row, text_features([task.problem_statement], [rollout.patch])[0]])
        return row

    def score(self, task: Task, rollout: Rollout, evidence: Verdict | None) -> float:
        return float(self.model.predict(self.features(task, rollout, evidence))[0])
