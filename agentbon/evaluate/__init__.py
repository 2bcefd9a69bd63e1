"""Grading given patches (``agentbon eval``): predictions made anywhere, graded as ``agentbon run`` grades.

``predictions`` reads the file, ``match`` sorts it against the suite, ``seed`` turns predictions into finished
rollouts, ``run`` hands them to the batch runner, ``report`` writes ``eval_report.json``, ``table`` shows it.
Several systems' predictions as one best-of-N run: ``ensemble`` lays them out as rollouts, ``ensemble_run`` grades,
selects and reports them.
"""

from agentbon.evaluate.match import Matched, SeveralModels, match
from agentbon.evaluate.predictions import InputError, Prediction, PredictionsFileError, read_predictions
from agentbon.evaluate.run import EvalResult, eval_config, eval_run_id, evaluate, prepare

__all__ = [
    "EvalResult", "InputError", "Matched", "Prediction", "PredictionsFileError", "SeveralModels", "eval_config",
    "eval_run_id", "evaluate", "match", "prepare", "read_predictions",
]
