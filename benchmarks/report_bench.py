"""Time and memory of the report metrics on synthetic arrays: 10,000 tasks × N = 256 × 6 ranking selectors, soft-bon
and majority.

Computes what ``agentbon report`` computes from the arrays (coverage@k, selected@k, loss@k and gap
recovered@k for every selector with bootstrap bands, soft-bon's softmax as the report computes it at this
size (estimated where the exact sum is too costly), majority's vote inside each subset likewise, plus the scaling table, the critics' calibration with
bootstrap intervals, the batch budget's uniform replay and the staged-verification frontier) and prints the
figures, with the exact softmax's cost timed on a sample of tasks beside them.
Usage: python benchmarks/report_bench.py [--tasks 10000] [--n 256] [--selectors 6] [--bootstrap 1000]
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np

from agentbon.config import ReportConfig, RunConfig
from agentbon.metrics import doubling_ks, selected_at_k, softmax_selected_at_k
from agentbon.metrics.majority import majority_selected_at_k
from agentbon.metrics.majority_estimate import majority_selected_at_k_estimate
from agentbon.metrics.softmax_estimate import softmax_selected_at_k_estimate
from agentbon.report.budget import budget_section
from agentbon.report.calibration import calibration_section
from agentbon.report.compute import compute_curves
from agentbon.report.data import FAIL, INFRA, PASS, RunData
from agentbon.report.frontier import frontier_section
from agentbon.report.scaling import scaling


def synthetic(tasks: int, n: int, selectors: int, seed: int = 0):
    """Per-task difficulty, 1% infra errors, and selectors from sharp to useless, with ties (0/1 test scores)."""
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 0.8, size=(tasks, 1))
    correct = (rng.random((tasks, n)) < p).astype(np.float64)
    valid = rng.random((tasks, n)) > 0.01
    scores = {}
    for s in range(selectors):
        noise = s / max(1, selectors - 1) * 3.0  # 0 = oracle-like, 3 = nearly random
        raw = correct + rng.normal(0, noise + 1e-3, (tasks, n))
        if s % 2:
            raw = np.round(raw)  # coarse scores: large tie groups, like pass/fail test evidence
        scores[f"sel{s}"] = np.where(valid, raw, np.nan)
    return correct, valid, scores


def clusters(correct: np.ndarray, valid: np.ndarray, seed: int = 2) -> np.ndarray:
    """Patch clusters per task: six in ten rollouts write a patch of their own, the others one of four shared ones
    (right patches share among themselves, wrong ones among themselves), as identical small fixes do."""
    rng = np.random.default_rng(seed)
    shared = rng.random(correct.shape) < 0.4
    label = np.where(shared, np.where(correct > 0, 0, 1) * 2 + rng.integers(0, 2, correct.shape), 4 + np.arange(correct.shape[1]))
    return np.where(valid, label, np.nan).astype(np.float64)


def run_data(correct: np.ndarray, valid: np.ndarray, critic: np.ndarray, n: int, scores_of: dict) -> RunData:
    """The arrays as a run's data: one selector's scores squashed into [0, 1] as the recorded critic, the evidence
    agreeing with the grade nine times in ten, one failing candidate in five not compiling and seven in ten of the
    evidence's failures failing a FAIL_TO_PASS test (the parse and subset stages' policies are replayed too), a
    batch budget of half of N per task, and the selectors that read no test (majority: another selector's coarse
    scores; soft-bon: the critic's logits; random), each a point of the frontier."""
    rng = np.random.default_rng(1)
    tasks = correct.shape[0]
    evidence = np.where(rng.random(correct.shape) < 0.9, correct > 0, correct == 0) & valid
    cells = np.where(valid, np.where(correct > 0, PASS, FAIL), INFRA).astype(np.int8)
    squashed = np.where(valid, 1.0 / (1.0 + np.exp(-np.nan_to_num(critic))), np.nan)
    return RunData(
        run_id="bench", task_ids=[f"t{i}" for i in range(tasks)], n=n,
        config=RunConfig.read({"n": n, "budget": tasks * n // 2, "budget_first": 4, "select": {"critic": "classifier"}}),
        budget_first=min(4, n),
        tasks={}, rollouts={}, grades={}, evidence={}, present=np.ones(correct.shape, bool), valid=valid,
        correct=correct, cells=cells, candidate=valid, evidence_pass=evidence, scores={"critic": squashed, "majority": scores_of["sel3"], "soft-bon": squashed / 0.5, "random": np.where(valid, 0.5, np.nan)},
        evidence_s=np.where(valid, 2.0, 0.0), unparsed=valid & (correct == 0) & (rng.random(correct.shape) < 0.2),
        parse_checked=True, subset_s=np.where(valid, 0.5, 0.0), subset_fail=valid & ~evidence & (rng.random(correct.shape) < 0.7),
        subset_known=valid, subset_checked=True, subset_live=np.zeros_like(valid),
    )  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=int, default=10_000)
    ap.add_argument("--n", type=int, default=256)
    ap.add_argument("--selectors", type=int, default=6)
    ap.add_argument("--bootstrap", type=int, default=1000)
    bench(ap.parse_args())


def bench(args: argparse.Namespace) -> None:
    correct, valid, scores = synthetic(args.tasks, args.n, args.selectors)
    soft = np.where(valid, 1.0 / (1.0 + np.exp(-np.nan_to_num(scores["sel1"]))), np.nan) / 0.5  # as run_data's
    votes = clusters(correct, valid)
    curve_scores = {**scores, "soft-bon": soft, "majority": votes}
    estimators: dict = {"soft-bon": "softmax", "majority": "majority"}
    ks = doubling_ks(args.n)
    input_mib = (correct.nbytes + valid.nbytes + sum(s.nbytes for s in scores.values())) / 2**20

    # Timed without tracing (tracemalloc slows allocation), then once more traced for the peak.
    c0, t0 = time.process_time(), time.perf_counter()
    curves = compute_curves(correct, valid, curve_scores, ks, n_boot=args.bootstrap, seed=0, estimators=estimators)
    t1 = time.perf_counter()
    table = scaling(curves)
    t2, c2 = time.perf_counter(), time.process_time()
    tracemalloc.start()
    scaling(compute_curves(correct, valid, curve_scores, ks, n_boot=args.bootstrap, seed=0, estimators=estimators))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    print(f"tasks={args.tasks} n={args.n} selectors={args.selectors} ks={ks} bootstrap={args.bootstrap}")
    data = run_data(correct, valid, scores["sel1"], args.n, scores)
    c3, t3 = time.process_time(), time.perf_counter()
    calibrated = calibration_section(data, ReportConfig(bootstrap=args.bootstrap))
    t4 = time.perf_counter()
    budget_section(data, [])
    t5 = time.perf_counter()
    frontier_section(data)
    t6, c6 = time.perf_counter(), time.process_time()
    print(f"input arrays:                 {input_mib:8.1f} MiB")
    print(f"curves + bootstrap bands:     {t1 - t0:8.3f} s")
    print(f"scaling table + fits:         {t2 - t1:8.3f} s")
    print(f"critic calibration + CIs:     {t4 - t3:8.3f} s   ({len(calibrated.critics)} critics)")
    print(f"batch budget uniform replay:  {t5 - t4:8.3f} s")
    print(f"staged verification replay:   {t6 - t5:8.3f} s")
    print(f"total compute:                {t2 - t0 + t6 - t3:8.3f} s   (target < 2 s)")
    print(f"CPU time (all threads):       {c2 - c0 + c6 - c3:8.3f} s   (wall > CPU/threads means the machine was busy)")
    # soft-bon's exact softmax over k-subsets costs O(N^2) per task and per quadrature node: timed on a sample
    # of tasks and scaled, against what the report did (docs/estimators.md, "soft-bon at scale").
    sample = min(args.tasks, 50)
    c9 = time.perf_counter()
    softmax_selected_at_k(soft[:sample], correct[:sample], ks)
    per_task = (time.perf_counter() - c9) / sample
    c10 = time.perf_counter()
    softmax_selected_at_k_estimate(soft, correct, ks, draws=1)
    c11 = time.perf_counter()
    selected_at_k(scores["sel1"], correct, ks)
    c12 = time.perf_counter()
    print(f"soft-bon's estimate alone: {c11 - c10:.3f} s; one ranking selector alone: {c12 - c11:.3f} s "
          "(both after the timed run: memory already touched)")
    c13 = time.perf_counter()
    majority_selected_at_k_estimate(votes, correct, ks, draws=1)
    c14 = time.perf_counter()
    majority_selected_at_k(votes[:sample], correct[:sample], ks)
    vote_task = (time.perf_counter() - c14) / sample
    print(f"majority's estimate alone: {c14 - c13:.3f} s; its exact sum: {vote_task * 1000:.1f} ms per task (on "
          f"{sample} tasks), so about {vote_task * args.tasks:.0f} s at {args.tasks} tasks")
    vote = curves.estimated.get("majority")
    print(f"majority in the curves above: {'exact' if vote is None else 'estimated'}", end="")
    print("" if vote is None else f"; Monte Carlo s.e. over ks: {', '.join(f'{100 * v:.3f}' for v in vote.se)} points")
    estimate = curves.estimated.get("soft-bon")
    how = "exact" if estimate is None else f"estimated, {estimate.draws} draw(s) of each kind per task"
    print(f"soft-bon in the curves above: {how}", end="")
    print("" if estimate is None else f"; Monte Carlo s.e. of selected@k over ks: "
          f"{', '.join(f'{100 * v:.3f}' for v in estimate.se)} points")  # fmt: skip
    print(f"soft-bon's exact softmax: {per_task * 1000:.1f} ms per task (on {sample} tasks), so about "
          f"{per_task * args.tasks:.0f} s at {args.tasks} tasks")
    print(f"peak traced memory (compute): {peak / 2**20:8.1f} MiB")
    print(f"process max RSS:              {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:8.1f} MiB")
    print(f"coverage@{ks[-1]} = {curves.coverage.mean[-1]:.4f}; ", end="")
    print(", ".join(f"{k}: selected@{ks[-1]}={v.mean[-1]:.4f}" for k, v in curves.selected.items()))
    print(f"points per doubling (coverage fit): {table.coverage.fit and table.coverage.fit.points_per_doubling}")


if __name__ == "__main__":
    main()
