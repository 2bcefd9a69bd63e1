"""`agentbon eval` throughput: predictions graded per second against the bare container rate, on real Docker.

    python benchmarks/eval_bench.py [--tasks 8] [--concurrency 2]

A small generated agentbon task (a git repository with a bug, a hidden pytest test, a gold patch) is built
into one task image on the local base image; ``--tasks`` copies of it (distinct task ids, that one image)
make the suite. Three measurements, all in this one process, at the same concurrency:

- bare: ``docker run --rm IMAGE true``, once per task: the engine's container rate, the floor of any grading;
- eval, distinct patches: one prediction per task, each patch different (the gold plus a per-task comment);
- eval, duplicate patches: the same gold patch for every task (verdicts are shared only within a task, as the
  grade of a patch depends on the task, so this measures that identical text is no shortcut across tasks).

Each eval is a fresh run: predictions written into the store, preflight, a local Ray started, one fresh
container per prediction through the real verifier. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentbon.config import load_config
from agentbon.evaluate import evaluate
from agentbon.sandbox import docker_client
from agentbon.sandbox.images import task_image
from agentbon.testing import init_repo
from agentbon.types import Environment, RepoSource, Task, TestSet

FILES = {
    "calc/__init__.py": "",
    "calc/ops.py": "def add(a, b):\n    return a - b\n",
    "tests/test_ops.py": "from calc.ops import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
}
HIDDEN = "from calc.ops import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
GOLD = "def add(a, b):\n    return a + b\n"


def diff(repo: Path, scratch: Path, files: dict[str, str]) -> str:
    subprocess.run(["git", "clone", "-q", str(repo), str(scratch)], check=True, capture_output=True)
    for name, text in files.items():
        (scratch / name).parent.mkdir(parents=True, exist_ok=True)
        (scratch / name).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=scratch, check=True)
    return subprocess.run(["git", "diff", "--cached"], cwd=scratch, check=True, capture_output=True, text=True).stdout


def make_suite(work: Path, n: int) -> tuple[list[Task], str, dict[str, str]]:
    """``n`` copies of the task on one image; the image; per-task distinct gold patches (and the plain gold)."""
    repo = work / "repo"
    sha = init_repo(repo, FILES)
    grade = TestSet(
        fail_to_pass=["tests/test_hidden.py::test_add"], pass_to_pass=["tests/test_ops.py::test_zero"],
        patch=diff(repo, work / "t", {"tests/test_hidden.py": HIDDEN}), files=["tests/test_hidden.py"],
    )  # fmt: skip
    base = Task(task_id="calc", problem_statement="add() subtracts", repo=RepoSource(url=str(repo), base_commit=sha), grade=grade)
    image = task_image(docker_client(), base)
    env = Environment(image=image.ref, workdir=image.workdir)
    tasks = [base.model_copy(update={"task_id": f"calc-{i}", "environment": env}) for i in range(n)]
    patches = {"gold": diff(repo, work / "g", {"calc/ops.py": GOLD})}
    for i in range(n):
        patches[f"calc-{i}"] = diff(repo, work / f"g{i}", {"calc/ops.py": GOLD + f"# reviewed for task {i}\n"})
    return tasks, image.ref, patches


def bare(image: str, n: int, concurrency: int) -> float:
    """Seconds for ``n`` ``docker run --rm IMAGE true``, ``concurrency`` at a time."""
    command = ["docker", "run", "--rm", "--network", "none", image, "true"]
    started = time.monotonic()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda _: subprocess.run(command, check=True, capture_output=True), range(n)))
    return time.monotonic() - started


def grading_span(path: Path) -> float:
    """Seconds from the plan (Ray up, predictions recorded) to the last grade verdict, from the run's event log."""
    from agentbon.store import RunStore

    events = list(RunStore(path).events())
    planned = next((e["ts"] for e in events if e["type"] in ("plan", "start")), None)
    last = max((e["ts"] for e in events if e["type"] == "verdict" and e["record"]["role"] == "grade"), default=None)
    return last - planned if planned is not None and last is not None else float("nan")


def graded(tasks: list[Task], patches: dict[str, str], work: Path, label: str, concurrency: int) -> tuple[float, float, dict]:
    """(wall of the whole eval, seconds spent grading, report) for one predictions file."""
    import json

    preds = work / f"{label}.jsonl"
    lines = [{"instance_id": t.task_id, "model_name_or_path": "bench", "model_patch": patches[t.task_id]} for t in tasks]
    preds.write_text("".join(json.dumps(line) + "\n" for line in lines))
    config = load_config(
        overrides=[f"run_dir={work / 'runs'}", f"run_id={label}", f"verify.concurrency={concurrency}"],
        concurrency=concurrency,
    )
    started = time.monotonic()
    result = evaluate(tasks, preds, config, suite="bench.jsonl")
    return time.monotonic() - started, grading_span(result.path), result.report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=2)
    args = parser.parse_args()
    n, k = args.tasks, args.concurrency
    with tempfile.TemporaryDirectory(prefix="agentbon-eval-bench-") as tmp:
        work = Path(tmp)
        started = time.monotonic()
        tasks, image, patches = make_suite(work, n)
        print(f"{n} tasks on {image} (ready in {time.monotonic() - started:.1f}s); concurrency {k}")
        bare_s = bare(image, n, k)
        print(f"bare containers (docker run --rm {image} true): {n} in {bare_s:.1f}s -> {n / bare_s:.2f}/s")
        same = {t.task_id: patches["gold"] for t in tasks}
        try:
            for label, chosen in (("distinct", patches), ("duplicate", same)):
                wall, grading, report = graded(tasks, chosen, work, label, k)
                print(
                    f"eval, {label} patches: {n} predictions, resolved {report['resolved_instances']}, errors "
                    f"{report['error_instances']}; {wall:.1f}s end to end -> {n / wall:.2f}/s; grading {grading:.1f}s "
                    f"-> {n / grading:.2f}/s ({(n / grading) / (n / bare_s):.2f}x the bare container rate)"
                )
        finally:  # the image is this run's own (its repository is made afresh each time)
            subprocess.run(["docker", "rmi", "-f", image], capture_output=True)


if __name__ == "__main__":
    main()
