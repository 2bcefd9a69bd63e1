"""Per-operation timings and engine calls of a rollout's Docker sandbox work: open, write_file, read_file, exec,
diff, close, one sandbox at a time.

    python benchmarks/sandbox_ops_bench.py [--sandboxes 10]

Engine calls are counted as the docker client sends them (method and endpoint, ids left out), so a change that
adds or removes a round-trip shows here. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import collections
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import requests

from agentbon.config import load_config
from agentbon.sandbox import DockerBackend
from agentbon.testing import init_repo
from agentbon.types import RepoSource, Task, TestSet

calls: collections.Counter[str] = collections.Counter()
_send = requests.Session.send


def _counting_send(session, request, **kwargs):
    parts = request.path_url.split("?")[0].split("/")[2:]  # drop the API version
    shape = "/".join("*" if len(p) >= 12 or p.startswith("agentbon-") else p for p in parts)
    calls[f"{request.method} {shape}"] += 1
    return _send(session, request, **kwargs)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sandboxes", type=int, default=10)
    a = p.parse_args()
    requests.Session.send = _counting_send
    root = Path(tempfile.mkdtemp(prefix="agentbon-bench-"))
    commit = init_repo(root / "repo", {"README.md": "hello\n", "NONCE": uuid.uuid4().hex})
    task = Task(task_id="ops", problem_statement="x", repo=RepoSource(url=str(root / "repo"), base_commit=commit),
                grade=TestSet(command="true"))
    backend = DockerBackend(load_config(overrides=["sandbox.memory=256m"]).sandbox)
    backend.prepare(task)
    seconds: dict[str, list[float]] = collections.defaultdict(list)
    per_op: dict[str, collections.Counter[str]] = {}

    def timed(op, fn, *args):
        before, started = calls.copy(), time.monotonic()
        value = fn(*args)
        seconds[op].append(time.monotonic() - started)
        per_op[op] = calls - before
        return value

    run = f"bench-ops-{uuid.uuid4().hex[:6]}"
    for i in range(a.sandboxes):
        box = timed("open", backend.open, task, {"run": run, "rollout": f"ops/{i}"})
        try:
            timed("write_file", box.write_file, "answer.txt", "nope\n")
            timed("read_file", box.read_file, "answer.txt")
            timed("exec", box.exec, "true")
            timed("diff", box.diff)
        finally:
            timed("close", box.close)
    for op, values in seconds.items():
        print(f"{op:10s} median {statistics.median(values) * 1000:6.1f} ms  engine calls {dict(per_op[op])}")
    rollout = ("open", "write_file", "diff", "close")
    print(f"a trivial rollout's sandbox work (open, write, diff, close): "
          f"{sum(statistics.median(seconds[op]) for op in rollout) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
