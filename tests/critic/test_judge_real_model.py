"""The LLM judge against the real local model: llama.cpp serving Qwen2.5-Coder-1.5B, asked about real candidates
of a demo task (its gold fix, and the same lines changed to another wrong answer). Slow (a real model on CPU).

What must hold: every score is p(YES) read from the server's logprobs (not a parsed answer, not the 0.5 of no
answer), a probability strictly inside (0, 1), and the same prompt scored twice gives the same p to within 0.02
(temperature 0, seed 0; llama.cpp's prefix cache changes the last digits). How well a 1.5B model judges is measured, not asserted: the report's calibration table does that over
a run (docs/estimators.md, "Critic calibration"); the figures are printed here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from agentbon.config import ModelConfig
from agentbon.critic.judge import LLMJudge
from agentbon.models.weights import QWEN_CODER_1_5B, cached_path
from agentbon.tasks import load_task
from agentbon.types import Rollout, Verdict

pytestmark = [pytest.mark.slow]
TASK = Path(__file__).resolve().parents[2] / "tasks" / "demo" / "demo-b-paginate"


@pytest.fixture(scope="module")
def served_model():
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama_cpp not installed (pip install 'agentbon[local]')")
    if cached_path(QWEN_CODER_1_5B) is None:
        pytest.skip("Qwen GGUF not fetched (agentbon model fetch)")
    from agentbon.models import make_model
    from agentbon.models.service import ModelService

    service = ModelService(ModelConfig(launcher="llama-cpp", logprobs=True, timeout_s=900.0))
    config = service.start()
    try:
        yield make_model(config)
    finally:
        service.stop()


def test_the_judge_reads_p_yes_from_the_real_servers_logprobs(served_model) -> None:
    task = load_task(TASK)
    judge = LLMJudge(served_model)
    wrong = task.gold_patch.replace("-(-total // per_page)", "total // per_page - 1")  # still off by one
    assert wrong != task.gold_patch
    candidates = {"gold": task.gold_patch, "wrong": wrong}
    scores: dict[str, float] = {}
    for i, (name, patch) in enumerate(candidates.items()):
        rollout = Rollout(run_id="judge", task_id=task.task_id, index=i, status="submitted", patch=patch)
        evidence = Verdict(run_id="judge", task_id=task.task_id, rollout_id=rollout.rollout_id, role="evidence",
                           status="undecided")  # fmt: skip
        scores[name] = judge.score(task, rollout, evidence)
        assert 0.0 < scores[name] < 1.0, (name, scores[name])
        # Temperature 0 and seed 0, but a prompt served from llama.cpp's prefix cache is not evaluated bit for bit
        # as a fresh one (measured: 0.5712 then 0.5717): the same p, to the judge's precision.
        assert judge.score(task, rollout, evidence) == pytest.approx(scores[name], abs=0.02)
    assert judge.sources == {"logprobs": 4}, judge.sources
    # The server's own count of each scoring's tokens: a prompt of a few hundred, and the answer.
    assert sorted(judge.tokens) == [f"{task.task_id}/0", f"{task.task_id}/1"], judge.tokens
    assert all(100 < t < 8192 for t in judge.tokens.values()), judge.tokens
    empty = Rollout(run_id="judge", task_id=task.task_id, index=9, status="submitted", patch="")
    assert judge.score(task, empty, None) == 0.0  # an empty patch is never sent to the model
    print(f"p(YES) from {QWEN_CODER_1_5B.filename}: " + ", ".join(f"{k} {v:.3f}" for k, v in scores.items()))
