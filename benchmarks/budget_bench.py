"""A batch budget against a uniform N at the same spend: solved tasks per 100 rollouts, by replaying a recorded run.

    python benchmarks/budget_bench.py --run runs/demo-n8      # a recorded run (every task's N rollouts)
    python benchmarks/budget_bench.py                         # a synthetic batch (see ``synthetic``)

The allocator (``agentbon.orchestrate.budget``) is replayed on the run's own rollouts in index order: it sees
each rollout's evidence verdict as it would have in the run (a verified pass ends the allotment of a task whose
evidence is its grade, and sends any other to the back of the queue), and a task
counts as solved when one of the rollouts it was given passed the grade. The uniform split at the same spend gives
every task ``spent // tasks`` rollouts of the lowest indices (one more to the first ``spent % tasks`` tasks). No model is called; prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from agentbon.orchestrate.budget import Allocator, replay

Recorded = tuple[dict[str, list[bool]], dict[str, list[bool]], dict[str, list[bool]], int, dict[str, bool]]


def recorded(run_dir: str) -> Recorded:
    """Per task, in index order: evidence passes, evidence decided, grade passes (finished rollouts only); N; and
    whether each task's evidence is its grade."""
    from agentbon.store import RunStore

    store = RunStore(run_dir)
    evidence, grade = store.verdicts("evidence"), store.verdicts("grade")
    rollouts = [r for r in store.rollouts().values() if r.finished]
    tasks = sorted({r.task_id for r in rollouts})
    out: tuple[dict[str, list[bool]], dict[str, list[bool]], dict[str, list[bool]]] = ({}, {}, {})
    for t in tasks:
        mine = sorted((r for r in rollouts if r.task_id == t), key=lambda r: r.index)
        ev = [evidence.get(r.rollout_id) for r in mine]
        out[0][t] = [v is not None and v.status == "pass" for v in ev]
        out[1][t] = [v is not None and v.status != "infra_error" for v in ev]
        out[2][t] = [(g := grade.get(r.rollout_id)) is not None and g.status == "pass" for r in mine]
    n = max((len(v) for v in out[0].values()), default=0)
    final = {t.task_id: t.evidence_is_grade for t in store.tasks() if t.task_id in out[0]}
    return out[0], out[1], out[2], n, final


def synthetic(tasks: int, n: int, seed: int = 0) -> Recorded:
    """Tasks of varied difficulty (pass rate ~ Beta(0.3, 1.5): many hard, a few easy); the evidence agrees with the
    grade except one time in ten (so it is not the grade)."""
    rng = np.random.default_rng(seed)
    rate = rng.beta(0.3, 1.5, size=tasks)
    grade = rng.random((tasks, n)) < rate[:, None]
    evidence = np.where(rng.random((tasks, n)) < 0.9, grade, ~grade)
    names = [f"t{i}" for i in range(tasks)]
    as_lists = lambda a: {t: [bool(x) for x in a[i]] for i, t in enumerate(names)}  # noqa: E731
    return as_lists(evidence), {t: [True] * n for t in names}, as_lists(grade), n, {t: False for t in names}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", help="a recorded run directory (default: a synthetic batch)")
    ap.add_argument("--tasks", type=int, default=500, help="synthetic batch: tasks")
    ap.add_argument("--n", type=int, default=16, help="synthetic batch: rollouts per task")
    ap.add_argument("--first", type=int, default=2, help="the budget's first allotment per task")
    args = ap.parse_args()
    evidence, verified, grade, n, final = recorded(args.run) if args.run else synthetic(args.tasks, args.n)
    tasks = len(evidence)
    print(f"{'recorded run ' + args.run if args.run else 'synthetic batch'}: {tasks} tasks, N = {n}, first = {args.first}")
    print(f"{'budget':>8} {'spent':>7} {'solved':>7} {'/100':>7} | {'uniform':>7} {'solved':>7} {'/100':>7} | decide s")
    for fraction in (0.25, 0.375, 0.5, 0.75, 1.0):
        budget = max(int(tasks * n * fraction), tasks * args.first)
        started = time.perf_counter()
        given, _ = replay(evidence, verified, Allocator(total=budget, n=n, first=args.first), final)
        took = time.perf_counter() - started
        spent = sum(given.values())
        solved = sum(any(grade[t][: given[t]]) for t in grade)
        share, extra = divmod(spent, tasks)  # the same spend: one more for the first `extra` tasks
        uniform = sum(any(grade[t][: share + (i < extra)]) for i, t in enumerate(grade))
        print(f"{budget:>8} {spent:>7} {solved:>7} {100 * solved / spent:>7.2f} | {spent:>7} {uniform:>7} "
              f"{100 * uniform / spent:>7.2f} | {took:.2f}")  # fmt: skip
    full = sum(any(v) for v in grade.values())
    print(f"uniform N for every task: {tasks * n} rollouts, {full} solved, {100 * full / (tasks * n):.2f} per 100")


if __name__ == "__main__":
    main()
