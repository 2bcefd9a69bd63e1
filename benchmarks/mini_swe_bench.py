"""mini-swe-agent's batch mode (``mini-extra swebench``) on the task and scripted model of throughput_bench.py, so its
rollouts/s can be set beside agentbon's.

    PYTHONPATH=. python benchmarks/mini_swe_bench.py --mini /tmp/msw-venv [--rollouts 64] [--workers 2,4]

``--mini`` is a virtual environment with mini-swe-agent installed (``python3 -m venv /tmp/msw-venv &&
/tmp/msw-venv/bin/pip install mini-swe-agent==2.4.6``). mini-swe-agent is not a dependency of agentbon: it runs
only as a subprocess, with that environment's ``mini-extra``.

What is the same as throughput_bench.py: the task (a one-line bug in a one-file repository, ``make_task``), its
image (built by ``DockerBackend().prepare``), the model server (``ScriptedServer``, real HTTP, zero latency) and the
two calls per rollout: the ``sed`` fix, then the submit command. mini gets one dataset instance per rollout
(``one-bug-0`` .. ``one-bug-N-1``, a local ``test.jsonl``, every instance with the task image as its ``image_name``)
and runs them with ``-w`` worker threads. It is configured with its text-based SWE-bench config
(``swebench_backticks.yaml``, model class ``litellm_textbased``: the scripted server answers in text, not tool
calls), the model ``openai/<name>`` with ``api_base`` pointing at the server, cost tracking set to ignore errors, and
its working directory set to the task image's repository (``/repo``). Its submit command is
``echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff``: what follows the marker is the patch.

At each worker count it measures the bare ``docker run --rm`` rate in the same run (``throughput_bench.bare_rate``),
then times mini from the launch of its process to its exit (its import time and dataset loading included); from
the moment its worker pool starts (the time in the name of its ``exit_statuses_<time>.yaml``) to the last trajectory
it wrote (which still holds litellm's import: mini imports it lazily, in the workers, before the first model call);
and, start-up excluded altogether, (N - 1) over the span from the first rollout's end to the last's (each trajectory
file's last write). A rollout counts only if ``preds.json`` holds a non-empty patch for it.
mini stops its containers in the background (``docker stop``: ten seconds, its ``sleep`` ignores SIGTERM) and
does not wait for them; the bench waits for them to go, reports how long that took, and removes any that remain.

mini-swe-agent verifies nothing: its rollouts/s exclude grading, unlike agentbon's end-to-end figure in
throughput_bench.py (whose "rollout phase only" line is the closer comparison). Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import docker

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput_bench import CpuClock, bare_rate, make_task  # noqa: E402

from agentbon.sandbox import DockerBackend, docker_client  # noqa: E402
from agentbon.testing.http import ScriptedServer  # noqa: E402

MODEL = "mini-scripted"
MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
WORKDIR = "/repo"  # where the task image puts the repository (Task.environment.workdir)


def mini_reply(command: str) -> str:
    """A reply in the format of mini's text-based config: a THOUGHT, then one ``mswea_bash_command`` block."""
    return f"THOUGHT: next step.\n\n```mswea_bash_command\n{command}\n```\n"


def script(body: dict[str, Any]) -> str:
    """First call: the fix (as throughput_bench's); then mini's submit command, the diff after the marker."""
    step = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
    if step == 0:
        return mini_reply("sed -i 's/ - 1$//' ops.py")
    return mini_reply(f"echo {MARKER} && git diff")


def write_dataset(path: Path, task_image: str, problem: str, commit: str, n: int) -> None:
    """A local dataset mini loads with ``datasets.load_dataset(path, split="test")``: one instance per rollout."""
    path.mkdir(parents=True)
    with (path / "test.jsonl").open("w") as f:
        for i in range(n):
            instance = {
                "instance_id": f"one-bug-{i}", "repo": "local/ops", "base_commit": commit,
                "problem_statement": problem, "image_name": task_image, "patch": "", "test_patch": "",
                "version": "0", "FAIL_TO_PASS": json.dumps(["test_ops.py::test_scale"]), "PASS_TO_PASS": "[]",
            }  # fmt: skip
            f.write(json.dumps(instance) + "\n")


def mini_env(root: Path) -> dict[str, str]:
    """mini's process environment: its global config, the datasets cache and the model offline and in ``root``."""
    env = dict(os.environ)
    local = "127.0.0.1,localhost"
    env.update({
        "MSWEA_GLOBAL_CONFIG_DIR": str(root / "mini-config"), "MSWEA_COST_TRACKING": "ignore_errors",
        "OPENAI_API_KEY": "scripted", "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "HF_HOME": str(root / "hf"), "HF_DATASETS_CACHE": str(root / "hf" / "datasets"),
        "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
        "NO_PROXY": ",".join(filter(None, [env.get("NO_PROXY", ""), local])),
        "no_proxy": ",".join(filter(None, [env.get("no_proxy", ""), local])),
    })  # fmt: skip
    return env


def task_containers(image: str) -> list[str]:
    """Ids of the task image's containers (mini names its own ``minisweagent-*``; bare_rate's are gone when it
    returns). Sparse: a container removed between the listing and an inspect is no error."""
    return [c["Id"] for c in docker_client().api.containers(all=True, filters={"ancestor": image})]


def mini_run(mini: Path, root: Path, image: str, url: str, n: int, workers: int) -> dict[str, Any]:
    """One ``mini-extra swebench`` run over the ``n`` instances with ``workers`` threads, timed and checked."""
    out = root / f"out-w{workers}"
    cmd = [
        str(mini / "bin" / "mini-extra"), "swebench", "--subset", str(root / "dataset"), "--split", "test",
        "-o", str(out), "-w", str(workers), "--model", f"openai/{MODEL}", "--model-class", "litellm_textbased",
        "-c", "swebench_backticks.yaml", "-c", f"model.model_kwargs.api_base={url}",
        "-c", "model.model_kwargs.api_key=scripted", "-c", "model.cost_tracking=ignore_errors",
        "-c", f"environment.cwd={WORKDIR}",
    ]  # fmt: skip
    log = root / f"mini-w{workers}.log"
    cpu = CpuClock.busy()
    launched = time.time()
    with log.open("w") as f:
        rc = subprocess.run(
            cmd, stdout=f, stderr=subprocess.STDOUT, env=mini_env(root), cwd=root, timeout=1800
        ).returncode
    exited = time.time()
    after = CpuClock.busy()
    while task_containers(image) and time.time() - exited < 120:  # its background `docker stop`s
        time.sleep(0.2)
    gone = time.time()
    left = task_containers(image)
    for cid in left:
        try:
            docker_client().api.remove_container(cid, force=True)
        except docker.errors.NotFound:
            pass
    if rc != 0:
        print(f"mini exited {rc}; the end of its log ({log}):\n" + log.read_text()[-3000:], file=sys.stderr)

    preds = json.loads((out / "preds.json").read_text()) if (out / "preds.json").is_file() else {}
    ids = [f"one-bug-{i}" for i in range(n)]
    patches = [str((preds.get(i) or {}).get("model_patch") or "") for i in ids]
    made = sum(1 for p in patches if p.strip())
    fixed = sum(1 for p in patches if "\n-    return x * 3 - 1\n+    return x * 3\n" in p)
    trajs = [out / i / f"{i}.traj.json" for i in ids]
    present = [t for t in trajs if t.is_file()]
    statuses = Counter(json.loads(t.read_text())["info"].get("exit_status") or "?" for t in present)
    statuses["no trajectory"] += len(trajs) - len(present)
    replies = [
        m["extra"]["timestamp"]
        for t in present
        for m in json.loads(t.read_text())["messages"]
        if m.get("role") == "assistant" and "timestamp" in m.get("extra", {})
    ]
    marks = [float(p.stem.removeprefix("exit_statuses_")) for p in out.glob("exit_statuses_*.yaml")]
    pool = min(marks) if marks else float("nan")
    ends = sorted(t.stat().st_mtime for t in present)  # each trajectory's last write: its rollout's end
    last = ends[-1] if ends else float("nan")
    steady = (len(ends) - 1) / (ends[-1] - ends[0]) if len(ends) > 1 and ends[-1] > ends[0] else float("nan")
    return {
        "rc": rc,
        "wall_s": exited - launched,
        "per_s": n / (exited - launched),
        "startup_s": pool - launched,
        "pool_per_s": n / (last - pool),
        "steady_per_s": steady,
        "first_reply_s": (min(replies) - launched) if replies else float("nan"),
        "calls": len(replies),
        "gone_s": gone - exited,
        "gone_per_s": n / (gone - launched),
        "left": len(left),
        "made": made,
        "fixed": fixed,
        "statuses": dict(statuses),
        "cpu_s": (after - cpu) / n if cpu is not None and after is not None else float("nan"),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mini", type=Path, required=True, help="a venv with mini-swe-agent installed")
    parser.add_argument("--rollouts", type=int, default=64)
    parser.add_argument("--workers", default="2,4")
    args = parser.parse_args(argv)
    if not (args.mini / "bin" / "mini-extra").is_file():
        parser.error(f"{args.mini / 'bin' / 'mini-extra'} not found: install mini-swe-agent in that venv")
    version = subprocess.run([str(args.mini / "bin" / "python"), "-c", "import importlib.metadata as m; "
                              "print(m.version('mini-swe-agent'))"], capture_output=True, text=True).stdout.strip()  # fmt: skip
    workers = [int(w) for w in args.workers.split(",")]
    root = Path(tempfile.mkdtemp(prefix="agentbon-mini-"))
    started = time.monotonic()
    rows: dict[int, tuple[dict[str, float], dict[str, Any]]] = {}
    try:
        task = make_task(root)
        image = DockerBackend().prepare(task)
        write_dataset(root / "dataset", image, task.problem_statement, task.repo.base_commit, args.rollouts)
        with ScriptedServer(script, model=MODEL) as server:
            for w in workers:
                bare = bare_rate(image, args.rollouts, w)
                got = mini_run(args.mini, root, image, server.url, args.rollouts, w)
                rows[w] = (bare, got)
                print(f"{w} workers done: {got['statuses']}, {got['calls']} model calls", file=sys.stderr)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    n = args.rollouts
    print(f"\nmini-swe-agent {version}, `mini-extra swebench`: {n} rollouts of one task per run (task image {image})\n")
    print("| | " + " | ".join(f"{w} workers" for w in workers) + " |")
    print("|---|" + "---|" * len(workers))
    lines = [
        ("bare `docker run --rm` (containers/s)", lambda b, g: f"{b['per_s']:.2f}"),
        ("mini rollouts/s, end to end (process launch to exit)", lambda b, g: f"{g['per_s']:.2f}"),
        ("mini rollouts/s, worker pool start to last trajectory (litellm import included)", lambda b, g: f"{g['pool_per_s']:.2f}"),
        ("mini rollouts/s, first rollout end to last, (N-1)/span (no start-up, no litellm import)", lambda b, g: f"{g['steady_per_s']:.2f}"),
        ("mini rollouts/s, launch to its last container gone", lambda b, g: f"{g['gone_per_s']:.2f}"),
        ("mini / bare, end to end", lambda b, g: f"{g['per_s'] / b['per_s']:.2f}"),
        ("mini / bare, worker pool start to last trajectory", lambda b, g: f"{g['pool_per_s'] / b['per_s']:.2f}"),
        ("mini / bare, first rollout end to last", lambda b, g: f"{g['steady_per_s'] / b['per_s']:.2f}"),
        ("patches produced / rollouts", lambda b, g: f"{g['made']}/{n}"),
        ("patches that are the fix", lambda b, g: f"{g['fixed']}/{n}"),
        ("mini start-up: launch to worker pool (s)", lambda b, g: f"{g['startup_s']:.2f}"),
        ("launch to first model reply (s)", lambda b, g: f"{g['first_reply_s']:.2f}"),
        ("mini wall, launch to exit (s)", lambda b, g: f"{g['wall_s']:.1f}"),
        ("containers still stopping at exit: time to gone (s)", lambda b, g: f"{g['gone_s']:.1f}"),
        ("containers left behind, removed by the bench", lambda b, g: f"{g['left']}"),
        ("busy CPU s per bare container (whole machine)", lambda b, g: f"{b['cpu_s']:.3f}"),
        ("busy CPU s per mini rollout, launch to exit (whole machine)", lambda b, g: f"{g['cpu_s']:.3f}"),
    ]  # fmt: skip
    for label, cell in lines:
        print(f"| {label} | " + " | ".join(cell(*rows[w]) for w in workers) + " |")
    for w in workers:
        print(f"\n{w} workers: exit statuses {rows[w][1]['statuses']}, mini exit code {rows[w][1]['rc']}")
    print(f"\nbench wall time {time.monotonic() - started:.0f} s; mini verifies nothing (no grading in its figures)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
