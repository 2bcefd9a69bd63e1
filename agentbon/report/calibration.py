"""Critic calibration in every report that has grades: how well each critic's scores predict the grade.

Over the candidates a selector could pick whose grade is decided (pass or fail), for each of:

- **the run's critic**: the scores the ``critic`` selector recorded (or, for the heuristic prior, which is a pure
  function of the record, the prior recomputed), named as the run's config names it;
- **evidence passed**: 1 where the evidence tests passed, else 0, the baseline a critic must beat before it is
  trusted to decide anything;
- **classifier, out of fold**: ``agentbon critic train``'s logistic regression on the record-only features, each
  task's candidates scored by a model fitted on the other tasks (folds grouped by task), so it never saw the
  grade it is scored against. Skipped above ``OOF_LIMIT`` candidates (``agentbon critic train`` does it offline).

AUROC, ECE (10 equal-width bins) and Brier, each with a percentile bootstrap interval over tasks (whole tasks
resampled, as for the curves), and the reliability diagram's points. The section also says which critic the
run's selectors used and why, and whether a trained one beat the evidence baseline out of fold.
"""

from __future__ import annotations

import numpy as np

from agentbon.config import ReportConfig
from agentbon.critic import calibration as cal
from agentbon.metrics.fallback import among_whole
from agentbon.metrics.tournament import UNIT, UNSEEN
from agentbon.report.compute import mapped
from agentbon.report.data import RunData
from agentbon.report.schema import Calibration, CriticCalibration, PairwiseCalibration, Point, Role
from agentbon.types import Rollout

OOF_LIMIT = 20_000
"""Most candidates the report fits the out-of-fold classifier on (five fits of Newton's method)."""


def run_critic(data: RunData) -> tuple[str, str]:
    """The critic the run's selectors used, and why that one (``auto``: as it decided, critic/auto.py)."""
    kind, path = data.config.select.critic, data.config.select.critic_path
    if kind == "auto" and not path:
        from agentbon.critic.auto import recorded_choice

        choice = recorded_choice(data.path) if data.path is not None else None
        if choice:
            return str(choice.get("critic")), f"select.critic: auto: {choice.get('why')}"
        return "heuristic-prior", "select.critic: auto, and no choice recorded for the run: the hand-set prior"
    if kind in ("classifier", "auto") and path:
        return "classifier", f"select.critic_path names a trained classifier ({path})"
    if kind == "classifier":
        return "heuristic-prior", "no trained critic (select.critic_path unset): the hand-set prior, not learned"
    if kind == "judge":
        return "llm-judge", "select.critic: judge (the served model asked YES/NO, p(YES) from logprobs)"
    if kind == "scale-judge":
        return "scale-judge", "select.critic: scale-judge (the served model's expected rating on a 1-9 scale, from logprobs)"
    return "none", "select.critic: none"


def _recorded(data: RunData, cells: np.ndarray, name: str) -> np.ndarray | None:
    """The run critic's scores on ``cells``: the ``critic`` selector's, the prior's recomputed, else None."""
    scores = data.scores.get("critic")
    if scores is not None and np.isfinite(scores[cells]).all():
        return np.clip(scores[cells], 0.0, 1.0)
    if name != "heuristic-prior":
        return None
    from agentbon.critic.prior import HeuristicPrior

    prior = HeuristicPrior()
    picked = _rollouts_at(data, cells)
    return np.asarray([prior.score(data.tasks[r.task_id], r, data.evidence.get(r.rollout_id)) for r in picked])


def _rollouts_at(data: RunData, cells: np.ndarray) -> list[Rollout]:
    """The rollouts of the ``cells``, in the order ``cells`` selects them (row-major, as ``scores[cells]``)."""
    at = {(r.task_id, r.index): r for r in data.rollouts.values()}
    rows, cols = np.nonzero(cells)
    return [at[(data.task_ids[i], int(j))] for i, j in zip(rows, cols, strict=True)]


def _out_of_fold(data: RunData, cells: np.ndarray, labels: np.ndarray, seed: int) -> tuple[np.ndarray | None, str]:
    """The out-of-fold classifier's scores on ``cells``, or None with why not."""
    rows = np.nonzero(cells)[0]
    if len(rows) > OOF_LIMIT:
        return None, f"{len(rows)} candidates, over {OOF_LIMIT}: run `agentbon critic train` on the run"
    if len(np.unique(rows)) < 2:
        return None, "held-out scoring needs candidates of at least 2 tasks"
    if labels.min() == labels.max():
        return None, "every graded candidate has the same grade: nothing to learn"
    from agentbon.critic.features import NUMERIC_NAMES, numeric_features
    from agentbon.critic.training import out_of_fold

    picked = _rollouts_at(data, cells)
    X = np.vstack([numeric_features(data.tasks[r.task_id], r, data.evidence.get(r.rollout_id)) for r in picked])
    task_ids = [r.task_id for r in picked]
    return out_of_fold(X, labels, task_ids, list(NUMERIC_NAMES), False, 1.0, 5, seed), ""


def _block(name: str, role: Role, labels: np.ndarray, scores: np.ndarray, rows: np.ndarray, tasks: int,
           options: ReportConfig) -> CriticCalibration:  # fmt: skip
    measured = cal.measure(labels, scores, rows, tasks, options.bootstrap, options.confidence, options.seed)
    return CriticCalibration(name=name, role=role, tasks=int(np.count_nonzero(np.bincount(rows))), **measured)


def calibration_section(data: RunData, options: ReportConfig) -> Calibration:
    """The ``calibration`` part of ``summary.json`` (empty ``critics`` where no candidate has a decided grade)."""
    used, why = run_critic(data)
    out = Calibration(used=used, why=why)
    notes = out.notes
    if data.valid.size == 0:
        return out
    # A task whose critic selection failed on infrastructure has no score from the run's critic: out of every block
    # (compared on the same candidates), never read as a missing critic.
    left = data.left_out_rows("critic")
    cells = among_whole(data.candidate, data.fallback, data.valid) & ~left[:, None]
    if left.any():
        names = [t for t, out in zip(data.task_ids, left, strict=True) if out]
        notes.append(f"{len(names)} task(s) left out: the critic's selection failed on infrastructure "
                     f"({', '.join(names[:5])}{', …' if len(names) > 5 else ''}); the same command selects "
                     "them again")  # fmt: skip
    if not cells.any():
        notes.append("no candidate with a decided grade: nothing to calibrate")
        return out
    labels = data.correct[cells]
    rows = np.nonzero(cells)[0]
    tasks = len(data.task_ids)
    recorded = _recorded(data, cells, used) if used != "none" else None
    blocks: list[tuple[str, Role, np.ndarray]] = []
    if recorded is not None:
        blocks.append((used, "run", recorded))
    elif used != "none":
        notes.append(f"{used}: no scores recorded (add `critic` to select.selectors to measure it)")
    blocks.append(("evidence passed", "baseline", data.evidence_pass[cells].astype(np.float64)))

    def measured(block: tuple[str, Role, np.ndarray]) -> CriticCalibration:
        return _block(block[0], block[1], labels, block[2], rows, tasks, options)

    out.critics += mapped(measured, blocks, labels.size)  # independent blocks
    out.comparators = [pairwise(data, name, options) for name in sorted(data.comparisons)]
    oof, skipped = _out_of_fold(data, cells, labels, options.seed)
    if oof is None:
        notes.append(f"classifier, out of fold: not fitted ({skipped})")
        return out
    block = _block("classifier, out of fold", "out-of-fold", labels, oof, rows, tasks, options)
    out.critics.append(block)
    base_auc, oof_auc = out.critics[-2].auroc.mean, block.auroc.mean
    if base_auc is None or oof_auc is None:
        notes.append("AUROC undefined (one grade only): no critic can be compared with the evidence")
    elif oof_auc > base_auc:
        notes.append(
            f"a classifier trained on this run's grades beats the evidence result out of fold (AUROC {oof_auc:.3f} "
            f"against {base_auc:.3f}): train it (`agentbon critic train`) and name it in select.critic_path"
        )
    else:
        notes.append(
            f"a classifier trained on this run's grades does not beat the evidence result out of fold (AUROC "
            f"{oof_auc:.3f} against {base_auc:.3f}): keep tests first (tests-then-critic)"
        )
    return out


def pairwise_stats(q: np.ndarray, cells: np.ndarray, correct: np.ndarray) -> tuple[int, int, float, float]:
    """One task's compared pairs among ``cells`` (graded candidates): (pairs compared, decisive pairs, the passing
    one preferred (ties half), the sum of the probabilities given the passing one)."""
    at = np.flatnonzero(cells)
    sub = q[np.ix_(at, at)]
    seen = np.triu(sub != UNSEEN, 1)
    good = correct[at] > 0
    decisive = seen & (good[:, None] != good[None, :])
    # p(passing better): q[i, j] where i passes, else q[j, i] = UNIT - q[i, j].
    p_pass = np.where(good[:, None], sub, UNIT - sub) / UNIT
    chosen = p_pass[decisive]
    wins = float((chosen > 0.5).sum() + 0.5 * (chosen == 0.5).sum())
    return int(seen.sum()), int(decisive.sum()), wins, float(chosen.sum())


def pairwise(data: RunData, name: str, options: ReportConfig) -> PairwiseCalibration:
    """A tournament's pairwise accuracy against the grade over the candidates a selector could pick (its
    comparisons among flagged candidates count where the fallback chooses among them), with a percentile bootstrap
    interval over tasks; a task its selection failed on (``left_out``) is out."""
    from agentbon.metrics.bootstrap import bootstrap_means, percentile_interval

    cells = among_whole(data.candidate, data.fallback, data.valid) & ~data.left_out_rows(name)[:, None]
    stats = np.zeros((len(data.task_ids), 3))
    compared = 0
    for row, q in data.comparisons[name].items():
        seen, decisive, wins, p_sum = pairwise_stats(q, cells[row], data.correct[row])
        compared += seen
        stats[row] = decisive, wins, p_sum
    decisive, wins, p_sum = stats.sum(axis=0)
    tasks = int(np.count_nonzero(stats[:, 0]))
    bias, consistent = _position(data, name)
    if decisive == 0:
        return PairwiseCalibration(selector=name, compared=compared, decisive=0, tasks=0,
                                   accuracy=Point(mean=None, lo=None, hi=None), position_bias=bias,
                                   consistent=consistent)  # fmt: skip
    lo = hi = None
    rows = stats[stats[:, 0] > 0]
    if len(rows) >= 2:
        means = bootstrap_means(rows, n_boot=min(options.bootstrap, cal.RESAMPLES), seed=options.seed)
        low, high = percentile_interval(means[:, 1] / means[:, 0], options.confidence)
        lo, hi = float(low), float(high)
    return PairwiseCalibration(
        selector=name, compared=compared, decisive=int(decisive), tasks=tasks,
        accuracy=Point(mean=round(wins / decisive, 6), lo=lo, hi=hi), mean_p=round(p_sum / decisive, 6),
        position_bias=bias, consistent=consistent,
    )  # fmt: skip


def _position(data: RunData, name: str) -> tuple[float | None, float | None]:
    """The comparator's mean preference for position A and the share of its comparisons whose two orders agree,
    over the comparisons it asked in both orders (tasks left out aside)."""
    left = data.left_out.get(name, {})
    both = [(c.p_asked_first, c.p_asked_second) for task_id, s in data.selections.get(name, {}).items()
            if task_id not in left for c in s.comparisons
            if c.p_asked_first is not None and c.p_asked_second is not None]  # fmt: skip
    if not both:
        return None, None
    first, second = np.array([a for a, _ in both]), np.array([b for _, b in both])
    agree = ((first > 0.5) & (second > 0.5)) | ((first < 0.5) & (second < 0.5))
    return round(float((first - second).mean()), 6), round(float(agree.mean()), 6)
