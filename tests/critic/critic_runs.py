"""A synthetic run store of graded rollouts for training the critic (real records, made-up outcomes)."""

from __future__ import annotations

import numpy as np

from agentbon.store import RunStore
from agentbon.types import RepoSource, Rollout, Task, TestSet, Usage, Verdict


def make_run(path, tasks: int = 8, n: int = 6, seed: int = 0) -> RunStore:
    """Rollouts whose grade correlates with evidence, submission and patch size (as real ones tend to)."""
    rng = np.random.default_rng(seed)
    store = RunStore(path)
    task_list = [
        Task(
            task_id=f"{store.run_id}-t{t}",
            problem_statement=f"function f{t} returns the wrong value for negative input",
            repo=RepoSource(url=".", base_commit="HEAD"),
            grade=TestSet(fail_to_pass=["t.py::x"]),
        )
        for t in range(tasks)
    ]
    store.create({"n": n}, task_list)
    for task in task_list:
        for i in range(n):
            good = bool(rng.random() < 0.45)
            evidence_pass = good or rng.random() < 0.2
            submitted = good or rng.random() < 0.5
            lines = "".join(f"+line {j}\n" for j in range(int(rng.integers(1, 4 if good else 30))))
            patch = f"diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-old\n{lines}"
            rollout = Rollout(
                run_id=store.run_id,
                task_id=task.task_id,
                index=i,
                status="submitted" if submitted else "step_limit",
                patch=patch,
                steps=int(rng.integers(2, 20)),
                usage=Usage(prompt_tokens=1000, completion_tokens=200),
            )
            store.save_rollout(rollout)
            for role, status in (
                ("evidence", "pass" if evidence_pass else "fail"),
                ("grade", "pass" if good else "fail"),
            ):
                store.save_verdict(
                    Verdict(
                        run_id=store.run_id,
                        task_id=task.task_id,
                        rollout_id=rollout.rollout_id,
                        role=role,
                        status=status,
                        tests={"t.py::x": "passed" if status == "pass" else "failed"},
                    )
                )
    return store
