"""What a point costs: a cost and the accuracy it buys at the same k and over the same tasks, checked against
brute force (every k-subset of a task's samples, and the tokens summed from the store's rollouts)."""

from __future__ import annotations

import itertools

import pytest
import yaml
from synth import make_run

from agentbon.report import RunReport, build_summary, render_markdown

# b has an infra error (3 samples: k = 4 is not measured), d nothing but infra errors (not in the curves).
GRID = {"a": "PFFF", "b": "FFPI", "c": "FPPF", "d": "IIII"}
TESTS = {"a": [0.2, 0.9, 0.1, 0.3], "b": [0.5, 0.5, 0.5, 0.0], "c": [0.1, 0.8, 0.2, 0.8]}


def brute_selected(codes: str, scores: list[float], k: int) -> float:
    """Mean over the k-subsets of the task's samples of the top score's grade, ties broken uniformly."""
    samples = [i for i, c in enumerate(codes) if c in "PF"]
    values = []
    for subset in itertools.combinations(samples, k):
        top = max(scores[i] for i in subset)
        tied = [i for i in subset if scores[i] == top]
        values.append(sum(codes[i] == "P" for i in tied) / len(tied))
    return sum(values) / len(values)


def tokens_per_rollout(store) -> float:
    rollouts = list(store.rollouts().values())
    return sum(r.usage.prompt_tokens + r.usage.completion_tokens for r in rollouts) / len(rollouts)


def test_cost_per_solved_task_is_the_cost_and_the_solved_at_one_k_over_the_curves_tasks(tmp_path):
    store = make_run(tmp_path, GRID, {"tests": TESTS})
    s = build_summary(store)
    per_rollout = tokens_per_rollout(store)
    in_curves = [t for t in GRID if "P" in GRID[t] or "F" in GRID[t]]
    k = 2  # the largest k every task in the curves has samples for
    solved = sum(brute_selected(GRID[t], TESTS[t], k) for t in in_curves)
    cost = s["cost"]
    assert cost["per_solved_k"] == k
    assert cost["selectors"]["tests"]["per_solved_task"] == pytest.approx(len(in_curves) * k * per_rollout / solved)
    for i, each in enumerate(s["ks"]):  # best-of-k over the tasks whose accuracy the curves give
        assert cost["cost_at_k"][i] == pytest.approx(len(in_curves) * each * per_rollout)
    assert "| cost per solved task at k = 2 (tests) |" in render_markdown(RunReport.model_validate(s))


def set_top(store, **values) -> None:
    path = store.path / "config.yaml"
    config = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**config, **values}))


def test_a_budget_run_costs_its_solved_tasks_at_its_first_allotment(tmp_path):
    grid = {"a": "FFPF", "b": "PFFF", "c": "FFFF"}
    tests = {t: [0.0] * 4 for t in grid}
    store = make_run(tmp_path, grid, {"tests": tests})
    set_top(store, budget=12, budget_first=2)
    s = build_summary(store)
    solved = sum(brute_selected(grid[t], tests[t], 2) for t in grid)
    assert s["cost"]["per_solved_k"] == 2
    expected = 3 * 2 * tokens_per_rollout(store) / solved
    assert s["cost"]["selectors"]["tests"]["per_solved_task"] == pytest.approx(expected)


def test_the_uniform_replay_of_a_budget_above_n_per_task_is_capped_at_n(tmp_path):
    """Every task ran its N = 4 rollouts; a budget of 30 (2.5 x N x tasks) cannot give a uniform split more than N
    each: the same 12 rollouts and the same outcomes, so the same solved tasks per 100 rollouts."""
    grid = {"a": "FFFP", "b": "PFFF", "c": "FFFF"}
    store = make_run(tmp_path, grid, {"tests": {t: [0.0] * 4 for t in grid}})
    set_top(store, budget=30, budget_first=2)
    b = build_summary(store)["budget"]
    solved = sum("P" in codes for codes in grid.values())  # every rollout of every task is in the replay
    assert (b["uniform_share"], b["uniform_rollouts"], b["uniform_solved"]) == (4, 12, solved)
    assert b["uniform_solved_per_100"] == pytest.approx(100 * solved / 12, abs=1e-3)
    assert b["uniform_solved_per_100"] == b["solved_per_100"]


def test_the_uniform_replay_below_n_per_task_uses_its_share(tmp_path):
    """A budget of 9 over 3 tasks: 3 each, the rollouts of indices 0..2 (a's pass at index 3 is past it)."""
    grid = {"a": "FFFP", "b": "PFFF", "c": "FFPF"}
    store = make_run(tmp_path, grid, {"tests": {t: [0.0] * 4 for t in grid}})
    set_top(store, budget=9, budget_first=2)
    b = build_summary(store)["budget"]
    solved = sum("P" in codes[:3] for codes in grid.values())
    assert (b["uniform_share"], b["uniform_rollouts"], b["uniform_solved"]) == (3, 9, solved)
    assert b["uniform_solved_per_100"] == pytest.approx(100 * solved / 9, abs=1e-3)


def test_a_run_config_of_another_version_is_read_leniently_and_gives_the_fixed_part(tmp_path):
    """The report reads the stored config as the RunConfig (``RunConfig.read``): a key this version does not know is
    ignored, a missing one takes its default, and the curves' part is ``fixed_part()`` (here early_stop_fixed = 2,
    no budget_first)."""
    from agentbon.config import RunConfig

    grid = {"a": "FFPF", "b": "PFFF", "c": "FFFF"}
    store = make_run(tmp_path, grid, {"tests": {t: [0.0] * 4 for t in grid}})
    set_top(store, budget=12, early_stop_fixed=2, a_retired_setting="x")
    assert build_summary(store)["cost"]["per_solved_k"] == 2
    stored = RunConfig.read(yaml.safe_load((store.path / "config.yaml").read_text()))
    assert (stored.budget, stored.budget_first, stored.fixed_part()) == (12, None, 2)
    assert RunConfig.read({}).fixed_part() == RunConfig().early_stop_fixed == 4
    assert RunConfig.read({"n": 4, "early_stop_fixed": 0}).early_stop_fixed == 0  # no longer valid: taken as stored
