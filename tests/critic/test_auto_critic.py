"""``select.critic: auto``: a classifier trained on the run directory's earlier runs, used only where it beats the
evidence result out of fold; the prior, named as such, otherwise; the choice and why in the run and its report."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))

from synth import flip_evidence, make_run, set_config  # noqa: E402

from agentbon.critic import make_critic  # noqa: E402
from agentbon.critic.auto import CHOICE_FILE, choose, recorded_choice  # noqa: E402
from agentbon.report import build_summary  # noqa: E402

TASKS = [f"t{i}" for i in range(6)]


def test_no_earlier_run_means_the_prior_and_says_so(tmp_path):
    store = make_run(tmp_path, {"a": "PF", "b": "FF"}, run_id="tonight")
    critic, why = choose(tmp_path, "tonight")
    assert critic.name == "heuristic-prior" and why["why"] == "no earlier run in the run directory to learn from"
    assert recorded_choice(store.path) == why and (store.path / CHOICE_FILE).exists()


def test_a_classifier_that_beats_the_evidence_on_earlier_runs_is_used(tmp_path):
    # Last night: the first two rollouts of every task pass, the evidence is wrong on half of them; a rollout's
    # token counts (they grow with its index in the synthetic store) tell the grade, the evidence does not.
    night = make_run(tmp_path, {t: "PPFF" for t in TASKS}, run_id="last-night")
    flip_evidence(night, [f"{t}/{i}" for t in TASKS for i in (0, 2)])
    tonight = make_run(tmp_path, {"a": "PF", "b": "FF"}, run_id="tonight")
    set_config(tonight, select={"critic": "auto"})
    critic = make_critic("auto", store=tonight)
    choice = recorded_choice(tonight.path)
    assert critic.name == "classifier" and choice["critic"] == "classifier"
    assert choice["runs"] == ["last-night"] and choice["rollouts"] == 24 and choice["tasks"] == 6
    assert choice["auroc_out_of_fold"] > choice["auroc_evidence"] and "beats the evidence" in choice["why"]
    section = build_summary(tonight)["calibration"]
    assert section["used"] == "classifier" and section["why"].startswith("select.critic: auto: trained on 24")


def test_a_classifier_that_does_not_beat_the_evidence_is_not_used(tmp_path):
    make_run(tmp_path, {t: "PPFF" for t in TASKS}, run_id="last-night")  # the evidence is the grade: AUROC 1
    make_run(tmp_path, {"a": "PF"}, run_id="tonight")
    critic, why = choose(tmp_path, "tonight")
    assert critic.name == "heuristic-prior" and "does not beat the evidence result" in why["why"]
    assert why["auroc_evidence"] == 1.0
