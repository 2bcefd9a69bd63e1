"""How long one verification may take: a budget of its own, from the verifier's own limits, whatever the rollout
took (docs/failure-taxonomy.md, "Verification").

A verification of one role opens a sandbox (``sandbox.setup_timeout_s``), does its housekeeping (apply the
candidate, the guard, the test patch: ``HOUSEKEEPING_S``), runs the tests (``verify.timeout_s`` each call, plus
``RUNNER_GRACE_S`` for the runner to report), and for a pass does it again in a sandbox of its own for the second
check. Past this budget something outside the tests hung (the engine, a sandbox), which is infrastructure: the
verification is retried within ``run.infra_retries``.
"""

from __future__ import annotations

from agentbon.config import VerifyConfig

HOUSEKEEPING_S = 120.0
"""Timeout of one housekeeping command in a verification sandbox (they take seconds; one allowance per sandbox)."""
RUNNER_GRACE_S = 60.0
"""A test runner's command may run this long past ``verify.timeout_s`` (the runner stops the tests at the timeout and
reports; this is the backstop for a runner that cannot)."""


def runner_calls(config: VerifyConfig) -> int:
    """The most test-runner calls in the first sandbox: one, another for the PASS_TO_PASS tests with
    ``fail_to_pass_first``, and ``flaky_runs - 1`` reruns of the flaky tests under ``flaky: rerun``."""
    return 1 + int(config.fail_to_pass_first) + (config.flaky_runs - 1 if config.flaky == "rerun" else 0)


def budget_s(config: VerifyConfig, setup_timeout_s: float) -> float:
    """Seconds one verification of one role may take: the first sandbox with its runner calls, then the second
    check's sandbox with one call (and the harness's set-up part before it)."""
    run_s = config.timeout_s + RUNNER_GRACE_S
    sandbox_s = setup_timeout_s + HOUSEKEEPING_S
    return sandbox_s + runner_calls(config) * run_s + sandbox_s + HOUSEKEEPING_S + run_s
