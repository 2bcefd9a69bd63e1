"""A verification's budget is its own: every step the verifier may take, nothing of the rollout's time."""

from __future__ import annotations

from agentbon.config import VerifyConfig
from agentbon.verify.budget import RUNNER_GRACE_S, budget_s


def test_the_budget_holds_both_sandboxes_and_grows_by_one_test_run_per_runner_call():
    strict = VerifyConfig(timeout_s=100, flaky="strict")
    base = budget_s(strict, setup_timeout_s=10)
    assert base >= 2 * 10 + 2 * 100  # the first run and the second check, each in a sandbox of its own
    run = 100 + RUNNER_GRACE_S
    assert budget_s(strict.model_copy(update={"fail_to_pass_first": True}), 10) == base + run
    assert budget_s(strict.model_copy(update={"flaky": "rerun", "flaky_runs": 3}), 10) == base + 2 * run
    assert budget_s(strict, setup_timeout_s=70) == base + 2 * 60  # two sandbox starts

