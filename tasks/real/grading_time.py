"""Grading time per candidate on ``tasks/real``'s bug fixes: the whole suite's PASS_TO_PASS against the lean lists.

Each task's gold patch is graded through agentbon's verifier (fresh Docker sandbox, the second check included, as a
batch grades a candidate) with its grade's PASS_TO_PASS as the task file had it at git revision ``--before`` (the
whole suite) and as it is now (lean), everything else from the task file as it is, so both use one image. The two
alternate (ABBA by round) after one untimed grade that builds the image. Figures: docs/authoring.md.

Usage (Docker needed, agentbon importable): ``PYTHONPATH=. python tasks/real/grading_time.py --before REV [--rounds 3]
[--task ID ...]``
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
from pathlib import Path

import yaml

from agentbon.config import SandboxConfig, VerifyConfig
from agentbon.sandbox import make_backend
from agentbon.tasks import load_task
from agentbon.types import Rollout, Task
from agentbon.verify import TestVerifier

HERE = Path(__file__).resolve().parent


def whole_suite(task: Task, before: str) -> Task:
    """``task`` with the grade's PASS_TO_PASS of its task file at revision ``before``."""
    rel = (HERE / task.task_id / "task.yaml").relative_to(HERE.parents[1]).as_posix()
    text = subprocess.run(["git", "show", f"{before}:{rel}"], cwd=HERE, check=True, capture_output=True, text=True)
    p2p = yaml.safe_load(text.stdout)["grade"]["pass_to_pass"]
    return task.model_copy(update={"grade": task.grade.model_copy(update={"pass_to_pass": p2p})})


def grade(verifier: TestVerifier, task: Task, index: int) -> tuple[float, str]:
    rollout = Rollout(run_id="timing", task_id=task.task_id, index=index, status="submitted", patch=task.gold_patch)
    verdict = verifier.verify(task, rollout, "grade")
    return verdict.duration_s or 0.0, verdict.status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="A git revision whose task files hold the whole suite's lists.")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--task", nargs="*", default=None)
    args = parser.parse_args()
    verifier = TestVerifier(make_backend(SandboxConfig()), VerifyConfig(), labels={"stage": "timing"})
    cpu = next((line.split(":", 1)[1].strip() for line in subprocess.run(
        ["lscpu"], capture_output=True, text=True).stdout.splitlines() if line.startswith("Model name")), platform.machine())  # fmt: skip
    print(f"CPU: {cpu}; {args.rounds} rounds; seconds per graded candidate: median (fastest)")
    print("| task | PASS_TO_PASS whole → lean | test files whole → lean | whole suite | lean | status |")
    print("|---|---|---|---:|---:|---|")

    def shown(times: list[float]) -> str:
        return f"{statistics.median(times):.1f} ({min(times):.1f})"

    for folder in sorted(p for p in HERE.iterdir() if (p / "task.yaml").is_file()):
        lean = load_task(folder)
        if lean.kind != "bugfix" or (args.task and lean.task_id not in args.task):
            continue
        whole = whole_suite(lean, args.before)
        grade(verifier, lean, 0)  # builds the image; not timed
        times: dict[str, list[float]] = {"whole": [], "lean": []}
        statuses = set()
        for r in range(args.rounds):
            for name in ("whole", "lean") if r % 2 == 0 else ("lean", "whole"):
                seconds, status = grade(verifier, whole if name == "whole" else lean, r + 1)
                times[name].append(seconds)
                statuses.add(status)
        files = [len({t.split("::")[0] for t in task.grade.tests}) for task in (whole, lean)]
        print(
            f"| `{lean.task_id}` | {len(whole.grade.pass_to_pass)} → {len(lean.grade.pass_to_pass)} | "
            f"{files[0]} → {files[1]} | {shown(times['whole'])} | {shown(times['lean'])} | "
            f"{', '.join(sorted(statuses))} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
