"""Verification throughput (candidates per second) with and without de-duplication, on real containers.

    python benchmarks/verify_bench.py [--suite tasks/demo] [--concurrency 2] [--tasks N] [--backend docker]
    python benchmarks/verify_bench.py --second-check compare [--tasks N]

``--second-check compare`` instead grades the same candidates (with de-duplication) twice: without and with the
independent second check of the FAIL_TO_PASS tests (docs/security.md, "Second check"; it runs for the candidates
whose first run passed: the three gold ones per task, one verification after de-duplication).

Per task, 8 candidates the way a best-of-8 batch produces them: the gold patch three times (two of
them differing only in ``index`` lines and trailing whitespace, i.e. equal after normalisation), two
wrong patches (a harmless edit to the file the gold patch fixes: applies, resolves nothing; one of
them twice) and the empty patch twice: 4 distinct patches. Every candidate is graded (hidden tests)
in a fresh sandbox, ``--concurrency`` at a time; with de-duplication identical patches are verified
once per task and share the verdict. Task images are built (or found) before the clock starts.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentbon.config import SandboxConfig, VerifyConfig
from agentbon.diffs import files_touched
from agentbon.sandbox import make_backend
from agentbon.tasks import load_suite
from agentbon.types import Rollout, Task, patch_hash
from agentbon.verify import TestVerifier
from agentbon.verify.guard import why_protected


def _wrong_patch(task: Task, work: Path, tag: str) -> str:
    """A patch that applies at base and changes nothing that matters: a comment appended to the gold's first file."""
    target = next(p for p in files_touched(task.gold_patch or "") if not why_protected(p, set()))
    repo = work / f"{task.task_id}-{tag}"
    subprocess.run(["git", "clone", "-q", task.repo.url, str(repo)], check=True, capture_output=True)
    subprocess.run(["git", "-C", str(repo), "checkout", "-q", task.repo.base_commit], check=True, capture_output=True)
    path = repo / target
    path.write_text(path.read_text() + f"\n# {tag}: reviewed, no change needed\n")
    return subprocess.run(["git", "-C", str(repo), "diff"], check=True, capture_output=True, text=True).stdout


def _variant(patch: str) -> str:
    """The same change with different ``index`` lines and trailing whitespace (equal after normalisation)."""
    lines = [ln.replace("index ", "index 0000000..", 1) if ln.startswith("index ") else ln for ln in patch.splitlines()]
    return "\n".join(lines) + "\n\n"


def candidates(task: Task, work: Path) -> list[tuple[Rollout, bool]]:
    """Eight rollouts for one task and whether each should resolve it."""
    gold = task.gold_patch or ""
    wrong_a, wrong_b = _wrong_patch(task, work, "a"), _wrong_patch(task, work, "b")
    patches = [
        (gold, True),
        (_variant(gold), True),
        (gold, True),
        (wrong_a, False),
        (wrong_a, False),
        (wrong_b, False),
        ("", False),
        ("", False),
    ]
    return [
        (Rollout(run_id="bench", task_id=task.task_id, index=i, status="submitted", patch=p), ok)
        for i, (p, ok) in enumerate(patches)
    ]


class WithoutSecondCheck(TestVerifier):
    """The verifier with its second check left out (for the benchmark's comparison only)."""

    def _second_check(self, task, tests, patch, first):
        return first


def run(
    tasks: list[Task], work: Path, backend, concurrency: int, dedupe: bool, second_check: bool = True
) -> tuple[float, int, int, int]:
    """Grade every candidate; return wall seconds, candidates, sandboxes opened (verifications), wrong verdicts.

    With ``dedupe`` each distinct (task, normalised patch) is verified once, as the run's driver does."""
    kind = TestVerifier if second_check else WithoutSecondCheck
    verifier = kind(backend, VerifyConfig(timeout_s=300), labels={"stage": "bench"})
    jobs = [(task, rollout, ok) for task in tasks for rollout, ok in candidates(task, work)]
    # Rollouts of one task finish at different times: interleave tasks so identical patches are rarely in flight together.
    jobs.sort(key=lambda job: job[1].index)
    key = (lambda job: (job[0].task_id, patch_hash(job[1].patch))) if dedupe else (lambda job: id(job))
    distinct = list({key(job): job for job in reversed(jobs)}.values())[::-1]  # the first job of each key
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        found = pool.map(lambda job: verifier.verify(job[0], job[1], "grade"), distinct)
        by_key = dict(zip(map(key, distinct), found, strict=True))
    wall = time.monotonic() - started
    verdicts = [by_key[key(job)] for job in jobs]
    wrong = sum((v.status == "pass") != ok for v, (_, _, ok) in zip(verdicts, jobs, strict=True))
    infra = sum(v.status == "infra_error" for v in verdicts)
    if infra:
        print(f"  {infra} infra errors: {next(v.reason for v in verdicts if v.status == 'infra_error')}")
    return wall, len(jobs), len(distinct), wrong


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="tasks/demo")
    parser.add_argument("--tasks", type=int, default=None, help="Only the first N tasks.")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--backend", default="docker", choices=["docker", "process"])
    parser.add_argument(
        "--second-check", default="on", choices=["on", "compare"], help="compare: with de-duplication, without/with it"
    )
    args = parser.parse_args()
    tasks, errors = load_suite(args.suite)
    if errors:
        print(f"{len(errors)} task(s) failed to load; first: {errors[0]}")
    tasks = [t for t in tasks if t.gold_patch][: args.tasks]
    backend = make_backend(SandboxConfig(backend=args.backend))
    started = time.monotonic()
    for task in tasks:
        backend.prepare(task)
    print(f"{len(tasks)} tasks, images ready in {time.monotonic() - started:.1f}s; concurrency {args.concurrency}")
    if args.second_check == "compare":
        with tempfile.TemporaryDirectory() as tmp:
            for second_check in (False, True):
                wall, n, ran, wrong = run(
                    tasks, Path(tmp) / str(second_check), backend, args.concurrency, True, second_check
                )
                label = "with the second check   " if second_check else "without the second check"
                print(
                    f"{label}: {n} candidates, {ran} verifications in {wall:.1f}s -> {n / wall:.2f} candidates/s "
                    f"({wall / ran:.2f}s per verification); verdicts off expectation: {wrong}"
                )
        return
    with tempfile.TemporaryDirectory() as tmp:
        for dedupe in (False, True):
            wall, n, ran, wrong = run(tasks, Path(tmp) / str(dedupe), backend, args.concurrency, dedupe)
            label = "with de-duplication   " if dedupe else "without de-duplication"
            print(
                f"{label}: {n} candidates, {ran} verifications in {wall:.1f}s -> {n / wall:.2f} candidates/s "
                f"({ran / wall:.2f} verifications/s, {wall / ran:.2f}s each); verdicts off expectation: {wrong}"
            )


if __name__ == "__main__":
    main()
