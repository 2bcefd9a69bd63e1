"""The tournaments in the report: their curves from the recorded comparisons, their points on the accuracy–cost
frontier charged with the comparisons' tokens, and the comparator's pairwise accuracy in the calibration section,
on a task whose comparator preferences are given (numbers worked out by hand below)."""

from __future__ import annotations

from unittest import mock

import pytest

from agentbon.report import build_report, write_reports
from agentbon.select import make_selector
from agentbon.store import RunStore
from agentbon.types import Comparison, RepoSource, Task, TestSet
from tests.metrics.test_selectors_on_subsets import Spec, TableCritic, _candidates

# p(i better than j) for i < j.
PREFS = {(0, 1): 0.2, (0, 2): 0.9, (0, 3): 0.5, (1, 2): 0.7, (1, 3): 0.4, (2, 3): 0.1}


class Known:
    """A comparator with the preferences above, 7 tokens a comparison."""

    name = "known"

    def compare(self, task, first, second):
        i, j = first.rollout.index, second.rollout.index
        p = PREFS[(i, j)] if i < j else 1 - PREFS[(j, i)]
        return Comparison(first=first.rollout.rollout_id, second=second.rollout.rollout_id, p_first=p, tokens=7)


def write(tmp_path, row: list[Spec], selectors: dict) -> RunStore:
    """A run of one task ``t`` whose rollouts are ``row``, each selector's choice among all of them recorded."""
    store = RunStore(tmp_path / "run")
    task = Task(task_id="t", problem_statement="p", repo=RepoSource(url=".", base_commit="HEAD"), grade=TestSet())
    with mock.patch("agentbon.store.os.fsync"):
        store.create({"n": len(row), "select": {"selectors": list(selectors)}}, [task])
        cands = _candidates(store.run_id, "t", row)
        for c in cands:
            store.save_rollout(c.rollout)
            for v in (c.grade, c.evidence):
                if v is not None:
                    store.save_verdict(v)
        for selector in selectors.values():
            store.save_selection(selector.select(task, cands))
    return store


def test_tournaments_in_curves_frontier_and_calibration(tmp_path):
    # 0 passes the grade and the evidence, 1 fails the grade and passes the evidence, 2 fails both, 3 passes the
    # grade and fails the evidence.
    row = [Spec("P", "a", "pass", critic=0.5), Spec("F", "b", "pass", critic=0.9), Spec("F", "c", "fail", critic=0.1),
           Spec("P", "d", "fail", critic=0.3)]  # fmt: skip
    names = ["tests-then-tournament", "tournament", "critic"]
    critic = TableCritic({f"t/{i}": s.critic for i, s in enumerate(row)})
    store = write(tmp_path, row, {name: make_selector(name, critic=critic, comparator=Known()) for name in names})
    report = build_report(store)

    sel = report.metrics.selectors
    assert sel["tournament"].estimator == "tournament"
    # Soft Borda among all four: 1.6, 1.9, 0.5, 2.0: rollout 3 (right) wins at k = 4. At k = 1 a uniform pick: 1/2.
    assert sel["tournament"].selected.mean[0] == pytest.approx(0.5)
    assert sel["tournament"].selected.mean[-1] == pytest.approx(1.0)
    # tests-then-tournament: the evidence passes {0, 1} first, 1 beats 0 (0.8): wrong at k = 4.
    assert sel["tests-then-tournament"].selected.mean[-1] == pytest.approx(0.0)

    points = {p.policy: p for p in report.frontier.policies} if report.frontier else {}
    alone, hybrid = points["tournament alone (no tests)"], points["tests-then-tournament: tests on all, then pairwise"]
    assert (alone.accuracy, alone.tokens, alone.tested) == (1.0, 6 * 7, 0)  # every pair compared
    assert (hybrid.accuracy, hybrid.tokens, hybrid.tested) == (0.0, 2 * 7, 4)  # one pair in each evidence tier

    # A k-subset holds a given pair with chance k(k-1)/12: the tokens a task's tournament spends at k = 1, 2, 4.
    assert report.cost.selectors["tournament"].judge_tokens == pytest.approx([0.0, 42 * 2 / 12, 42.0], abs=1e-3)
    assert report.cost.selectors["tests-then-tournament"].judge_tokens == pytest.approx([0.0, 14 / 6, 14.0], abs=1e-3)
    assert report.cost.selectors["critic"].judge_tokens is None

    comparators = {c.selector: c for c in report.calibration.comparators}
    # Pass/fail pairs: (0,1) 0.2 for the passing one (wrong), (0,2) 0.9, (1,3) 0.6, (2,3) 0.9 (right): 3 of 4.
    whole = comparators["tournament"]
    assert (whole.compared, whole.decisive, whole.accuracy.mean) == (6, 4, 0.75)
    assert whole.mean_p == pytest.approx((0.2 + 0.9 + 0.6 + 0.9) / 4)
    tiers = comparators["tests-then-tournament"]
    assert (tiers.compared, tiers.decisive, tiers.accuracy.mean) == (2, 2, 0.5)

    write_reports(store, report)
    text = (store.path / "report.md").read_text()
    assert "tournament's comparator" in text and "tournament alone (no tests)" in text
    assert "judge tokens a task, on a k-subset (tournament)" in text


def test_a_task_too_large_to_sum_is_estimated_and_says_so(tmp_path):
    # N = 16: C(16, 8) = 12,870 subsets at k = 8, over the exact limit: drawn, with its standard error in the note.
    import numpy as np

    from agentbon.metrics.tournament import UNIT, tournament_selected_at_k
    from agentbon.report.data import load_run
    from agentbon.report.tables import selectors as selectors_table
    from tests.metrics.test_selectors_on_subsets import PairTable

    row = [Spec("P" if i % 3 == 0 else "F", f"p{i}", "pass") for i in range(16)]
    store = write(tmp_path, row, {"tournament": make_selector("tournament", comparator=PairTable())})
    report = build_report(store)
    block = report.metrics.selectors["tournament"]
    assert block.estimate is not None and block.estimate.draws == 2048
    assert [se == 0 for se in block.estimate.se] == [True, True, True, False, True]  # only k = 8 is drawn
    data = load_run(store)
    q = data.comparisons["tournament"][0]
    assert (q >= 0).sum() == 16 * 15 and (q + q.T == UNIT)[q >= 0].all()
    exact = tournament_selected_at_k(np.zeros((1, 16)), data.correct, {0: q}, report.ks, max_subsets=20_000)
    assert abs(block.selected.mean[3] - exact[0, 3]) <= 5 * block.estimate.se[3]
    assert block.selected.mean[:3] == pytest.approx(exact[0, :3]) and block.selected.mean[4] == pytest.approx(exact[0, 4])
    table = selectors_table(report)
    assert any("2,048 uniform k-subsets" in note for note in table.notes)


def test_the_comparators_position_bias_is_measured(tmp_path):
    from agentbon.critic.pairwise import PairwiseJudge
    from tests.critic.test_pairwise_and_scale import BiasedComparer

    # The model favours what it is shown first by 0.2: p(first better) is 0.4 higher asked first than asked second.
    row = [Spec("P", "good", "pass"), Spec("F", "ok", "pass"), Spec("F", "bad", "pass")]
    judge = PairwiseJudge(BiasedComparer(bias=0.2))
    report = build_report(write(tmp_path, row, {"tournament": make_selector("tournament", comparator=judge)}))
    [c] = report.calibration.comparators
    assert c.position_bias == pytest.approx(0.4)
    # The orders agree only where the quality gap outweighs the bias (good against bad): 1 of 3 pairs.
    assert c.consistent == pytest.approx(1 / 3) and c.accuracy.mean == 1.0
    assert report.metrics.selectors["tournament"].selected.mean[-1] == 1.0
    from agentbon.report.tables import calibration as calibration_table

    table = calibration_table(report)
    assert table is not None and any("shown first by +0.400" in note and "agreed on 33%" in note for note in table.notes)
