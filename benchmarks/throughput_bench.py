"""Sandbox throughput: agentbon's rollouts/s end to end (verification included) against the engine's bare
``docker run --rm`` rate, measured in the same run, with engine calls per rollout and the time to the first rollout.

    python benchmarks/throughput_bench.py [--rollouts 32] [--slots 2,4] [--rounds 1]

The model is scripted (``agentbon.testing_http.ScriptedServer``, real HTTP, zero latency): two calls per rollout,
a fix (``sed``; with ``--unique-patches`` also a comment naming the call's seed, so every candidate differs and each one
is verified, where by default the driver verifies the one patch once) and the submit command. One task, a one-line bug in a one-file repository, graded by pytest in the task image.
Each round runs, at each slot count, the bare container rate (``containers.run(image, "true", remove=True)`` from
a thread pool of that size), then agentbon as it ships (resident executor, warm sandboxes, admission control), then
agentbon with one engine exec per command and no warm sandboxes (the way it was before). Prints figures; asserts
nothing (docs/sandboxes.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentbon.agent import SUBMIT_COMMAND
from agentbon.config import RunConfig, load_config
from agentbon.orchestrate import run_batch
from agentbon.sandbox import DockerBackend, docker_client
from agentbon.store import RunStore
from agentbon.testing import init_repo
from agentbon.testing_http import ScriptedServer
from agentbon.types import RepoSource, Task, TestSet

MODEL = "throughput-scripted"


def bash(command: str) -> str:
    return f"THOUGHT: next step.\n\n```bash\n{command}\n```\n"


UNIQUE = False
"""``--unique-patches``: every candidate differs, so none of the verifications is shared."""


def script(body: dict[str, Any]) -> str:
    """First call: fix the bug (with ``--unique-patches``, also a comment naming the call's seed); then submit."""
    step = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    if step == 0:
        mark = f" && echo '# fixed under seed {body.get('seed')}' >> ops.py" if UNIQUE else ""
        return bash(f"sed -i 's/ - 1$//' ops.py{mark}")
    return bash(SUBMIT_COMMAND)


def make_task(root: Path) -> Task:
    files = {
        "ops.py": "def scale(x):\n    return x * 3 - 1\n",
        "test_ops.py": "from ops import scale\n\n\ndef test_scale():\n    assert scale(3) == 9\n",
        "README.md": f"throughput task {uuid.uuid4().hex[:8]}\n",
    }
    commit = init_repo(root / "ops", files)
    return Task(
        task_id="one-bug", kind="migration", evidence_is_grade=True,
        problem_statement="scale() in ops.py is off by one: scale(x) must be x * 3.",
        repo=RepoSource(url=str(root / "ops"), base_commit=commit),
        grade=TestSet(fail_to_pass=["test_ops.py::test_scale"]),
    )  # fmt: skip


def bare_rate(image: str, count: int, slots: int) -> float:
    """Containers/s of ``docker run --rm IMAGE true`` from ``slots`` threads."""
    client = docker_client()
    started = time.monotonic()
    with ThreadPoolExecutor(slots) as pool:
        list(pool.map(lambda _: client.containers.run(image, ["true"], remove=True, network_mode="none"), range(count)))
    return count / (time.monotonic() - started)


def agentbon_run(task: Task, root: Path, url: str, n: int, slots: int, shipped: bool) -> dict[str, float]:
    overrides = [
        f"run_dir={root / 'runs'}", "agent.type=bash", f"model.endpoint={url}", f"model.name={MODEL}",
        "early_stop=false", "sandbox.memory=512m", "select.selectors=[tests-then-critic]",
    ]  # fmt: skip
    if not shipped:
        overrides += ["sandbox.executor=exec", "sandbox.warm=0"]
    run_id = f"tput-{slots}-{'new' if shipped else 'old'}-{uuid.uuid4().hex[:6]}"
    config: RunConfig = load_config(overrides=overrides, n=n, concurrency=slots, run_id=run_id)
    called = time.time()
    result = run_batch([task], config, suite="throughput")
    store = RunStore(result.path)
    rollouts = [r for r in store.rollouts().values() if r.status != "infra_error"]
    verdicts = list(store.verdicts("grade").values())
    events = [json.loads(line) for line in (result.path / "events.jsonl").read_text().splitlines()]
    first = min(r.timings.started_at for r in rollouts)
    last = max(e["ts"] for e in events if e["type"] == "verdict")
    return {
        "rollouts": len(rollouts),
        "passed": sum(1 for v in verdicts if v.status == "pass"),
        "per_s": len(rollouts) / (last - first),
        "rollout_phase_per_s": len(rollouts) / (max(r.timings.started_at + r.timings.wall_s for r in rollouts) - first),
        "first_rollout_s": first - called,
        "engine_calls": statistics.mean(r.sandbox.engine_calls for r in rollouts),
        "warm": sum(1 for r in rollouts if r.sandbox.warm) / len(rollouts),
        "setup_s": statistics.median(r.timings.setup_s for r in rollouts),
        "wall_s": result.wall_s,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rollouts", type=int, default=32)
    parser.add_argument("--slots", default="2,4")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--unique-patches", action="store_true", help="make every candidate differ (no shared verdicts)")
    args = parser.parse_args(argv)
    global UNIQUE
    UNIQUE = args.unique_patches
    slots = [int(s) for s in args.slots.split(",")]
    root = Path(tempfile.mkdtemp(prefix="agentbon-tput-"))
    task = make_task(root)
    image = DockerBackend().prepare(task)
    rows: dict[tuple[int, str], list[dict[str, float]]] = {}
    with ScriptedServer(script, model=MODEL) as server:
        for round_ in range(args.rounds):
            for s in slots:
                rate = bare_rate(image, args.rollouts, s)
                rows.setdefault((s, "bare"), []).append({"per_s": rate})
                for shipped in (True, False):
                    got = agentbon_run(task, root, server.url, args.rollouts, s, shipped)
                    rows.setdefault((s, "new" if shipped else "old"), []).append(got)
                print(f"round {round_ + 1}: {s} slots done", file=sys.stderr)

    def med(s: int, kind: str, key: str) -> float:
        return statistics.median(r[key] for r in rows[(s, kind)])

    patches = "every patch different" if UNIQUE else "one patch, verified once"
    print(f"\n{args.rollouts} rollouts of one task per run ({patches}), {args.rounds} round(s), medians\n")
    print("| | " + " | ".join(f"{s} at a time" for s in slots) + " |")
    print("|---|" + "---|" * len(slots))
    lines = [
        ("bare `docker run --rm` (containers/s)", "bare", "per_s", "{:.2f}"),
        ("agentbon, end to end, verification included (rollouts/s)", "new", "per_s", "{:.2f}"),
        ("agentbon before (exec per command, no warm pool)", "old", "per_s", "{:.2f}"),
        ("agentbon, rollout phase only (rollouts/s)", "new", "rollout_phase_per_s", "{:.2f}"),
        ("agentbon before, rollout phase only", "old", "rollout_phase_per_s", "{:.2f}"),
        ("engine calls per rollout sandbox", "new", "engine_calls", "{:.1f}"),
        ("engine calls per rollout sandbox, before", "old", "engine_calls", "{:.1f}"),
        ("rollouts that got a warm sandbox", "new", "warm", "{:.0%}"),
        ("median sandbox setup seen by a rollout (s)", "new", "setup_s", "{:.3f}"),
        ("median sandbox setup, before (s)", "old", "setup_s", "{:.3f}"),
        ("time to first rollout (s)", "new", "first_rollout_s", "{:.2f}"),
    ]
    for label, kind, key, fmt in lines:
        print(f"| {label} | " + " | ".join(fmt.format(med(s, kind, key)) for s in slots) + " |")
    for s in slots:
        ratio = med(s, "new", "per_s") / med(s, "bare", "per_s")
        before = med(s, "old", "per_s") / med(s, "bare", "per_s")
        print(f"\n{s} slots: agentbon / bare = {ratio:.2f} (before: {before:.2f}); "
              f"candidates passing: {med(s, 'new', 'passed'):.0f}/{args.rollouts}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
