"""What ``verify.fail_to_pass_first`` saves and costs, on real containers: the same candidates verified with every test
in one runner call, then with the FAIL_TO_PASS tests first (a candidate that fails one stops there).

    python benchmarks/staged_verify_bench.py [--candidates 16] [--passing 2] [--p2p-seconds 0,2,6] [--concurrency 2]

One task per ``--p2p-seconds`` value: a one-file repository with a one-line bug, one FAIL_TO_PASS test and ten
PASS_TO_PASS tests whose bodies take that many seconds in all (``time.sleep``: a suite's I/O, fixtures and
subprocesses are wall time in the container). Of ``--candidates`` candidate patches, ``--passing`` fix the bug; the
others each leave it in a different way (every patch differs, and de-duplication is off, so every candidate is
verified). For each value it prints the wall time and the container-seconds (the verdicts' own ``duration_s``) both
ways and checks that every verdict's status is the same. Prints figures; asserts nothing (docs/estimators.md,
"Staged verification").
"""

from __future__ import annotations

import argparse
import difflib
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentbon.config import VerifyConfig
from agentbon.sandbox import DockerBackend
from agentbon.testing import init_repo
from agentbon.types import RepoSource, Rollout, Task, TestSet, Verdict
from agentbon.verify import TestVerifier

P2P_TESTS = 10
OPS = "def scale(x):\n    return x * 3 - 1\n\n\ndef double(x):\n    return 2 * x\n"


def make_task(root: Path, p2p_seconds: float) -> Task:
    each = p2p_seconds / P2P_TESTS
    p2p = "".join(f"\n\ndef test_other_{i}():\n    time.sleep({each!r})\n    assert double({i}) == {2 * i}\n"
                  for i in range(P2P_TESTS))  # fmt: skip
    files = {
        "ops.py": OPS,
        "test_fix.py": "from ops import scale\n\n\ndef test_scale():\n    assert scale(3) == 9\n",
        "test_rest.py": "import time\n\nfrom ops import double\n" + p2p,
    }
    name = f"staged-{p2p_seconds:g}".replace(".", "_")
    commit = init_repo(root / name, files)
    return Task(
        task_id=name, kind="migration", evidence_is_grade=True,
        problem_statement="scale() in ops.py is off by one: scale(x) must be x * 3.",
        repo=RepoSource(url=str(root / name), base_commit=commit),
        grade=TestSet(fail_to_pass=["test_fix.py::test_scale"],
                      pass_to_pass=[f"test_rest.py::test_other_{i}" for i in range(P2P_TESTS)]),
    )  # fmt: skip


def patch_for(i: int, fixes: bool) -> str:
    """A patch of ops.py's first function: the fix, or a different wrong constant; a comment keeps each unique."""
    new = OPS.replace("x * 3 - 1", ("x * 3" if fixes else f"x * 3 - {i + 2}") + f"  # candidate {i}")
    diff = difflib.unified_diff(OPS.splitlines(True), new.splitlines(True), "a/ops.py", "b/ops.py")
    return "diff --git a/ops.py b/ops.py\n" + "".join(diff)


def verify_all(task: Task, patches: list[str], staged: bool, concurrency: int) -> tuple[float, list[Verdict]]:
    verifier = TestVerifier(DockerBackend(), VerifyConfig(dedupe=False, fail_to_pass_first=staged))
    rollouts = [Rollout(run_id="bench", task_id=task.task_id, index=i, status="submitted", patch=p)
                for i, p in enumerate(patches)]  # fmt: skip
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        verdicts = list(pool.map(lambda r: verifier.verify(task, r, "grade"), rollouts))
    return time.monotonic() - started, verdicts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--candidates", type=int, default=16)
    parser.add_argument("--passing", type=int, default=2)
    parser.add_argument("--p2p-seconds", default="0,2,6", help="comma-separated: the PASS_TO_PASS suite's own seconds")
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="agentbon-staged-"))
    patches = [patch_for(i, i < args.passing) for i in range(args.candidates)]
    print(f"{args.candidates} candidates ({args.passing} fix the bug), {args.concurrency} verifications at a time\n")
    print("| PASS_TO_PASS suite (s) | wall, one call (s) | wall, FAIL_TO_PASS first (s) | container-s, one call "
          "| container-s, FAIL_TO_PASS first | saved | stopped early | same statuses |")
    print("|---|---|---|---|---|---|---|---|")
    for seconds in (float(s) for s in args.p2p_seconds.split(",")):
        task = make_task(root, seconds)
        DockerBackend().prepare(task)  # the image before the clock
        whole_wall, whole = verify_all(task, patches, False, args.concurrency)
        staged_wall, staged = verify_all(task, patches, True, args.concurrency)
        whole_s, staged_s = sum(v.duration_s for v in whole), sum(v.duration_s for v in staged)
        same = all(a.status == b.status for a, b in zip(whole, staged, strict=True))
        passed = sum(v.status == "pass" for v in staged)
        if passed != args.passing or any(v.status == "infra_error" for v in whole + staged):
            odd = next((v for v in whole + staged if v.status == "infra_error"), None)
            print(f"  unexpected: {passed} passed (expected {args.passing})" + (f"; {odd.reason}" if odd else ""))
        print(f"| {seconds:g} | {whole_wall:.1f} | {staged_wall:.1f} | {whole_s:.1f} | {staged_s:.1f} | "
              f"{1 - staged_s / whole_s:+.0%} | {sum(bool(v.not_run) for v in staged)} | {'yes' if same else 'NO'} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
