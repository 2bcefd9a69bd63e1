"""Sandbox figures on this machine: base image, task image cold and cached, container start, exec, teardown, leftovers.

    python benchmarks/sandbox_bench.py [--force-base] [--starts 5] [--keep-image] [--hardening 10]

``--hardening N`` also times N sandboxes under each hardening setting alone and all together (non-root user,
capabilities dropped, no-new-privileges, the disk watchdog), interleaved in one run (docs/security.md).

``--force-base`` builds the base recipe into a scratch tag (removed afterwards), so the real base image and
every task image layered on it stay valid. The task image is built cold from a fresh repository made here.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from agentbon.config import SandboxConfig
from agentbon.sandbox import DockerBackend, docker_client, ensure_base_image
from agentbon.sandbox.base import base_tag, build_base_image
from agentbon.sandbox.watchdog import layer_size
from agentbon.types import RepoSource, Task, TestSet


def _repo(path: Path) -> str:
    """A small repository (a package and its tests, two commits) with a unique history, so its image is cold."""
    env = ["-c", "user.name=bench", "-c", "user.email=bench@localhost"]
    path.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    (path / "pkg").mkdir()
    (path / "tests").mkdir()
    (path / "pkg/__init__.py").write_text("")
    for i in range(20):
        (path / f"pkg/mod{i}.py").write_text(f"def f{i}(x):\n    return x + {i}\n")
        (path / f"tests/test_mod{i}.py").write_text(
            f"from pkg.mod{i} import f{i}\n\ndef test_f():\n    assert f{i}(0) == {i}\n"
        )
    (path / "NONCE").write_text(uuid.uuid4().hex)
    subprocess.run(["git", "-C", str(path), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(path), *env, "commit", "-qm", "base"], check=True)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()


HARDENING = {
    "none (root, default caps)": {
        "user": "root",
        "drop_capabilities": False,
        "no_new_privileges": False,
        "disk_limit": None,
    },
    "non-root user only": {"user": "auto", "drop_capabilities": False, "no_new_privileges": False, "disk_limit": None},
    "cap-drop only": {"user": "root", "drop_capabilities": True, "no_new_privileges": False, "disk_limit": None},
    "no-new-privileges only": {
        "user": "root",
        "drop_capabilities": False,
        "no_new_privileges": True,
        "disk_limit": None,
    },
    "disk watchdog only": {"user": "root", "drop_capabilities": False, "no_new_privileges": False, "disk_limit": "10g"},
    "all (the defaults)": {},
    "all, uid set up at start": {"user": "2000:2000"},
}
"""Each setting alone against none, and the defaults (all of them); ``disk_limit`` means the watchdog here unless
the engine has size quotas."""


def hardening_figures(client, task, rounds: int, run_id: str) -> None:
    """Start, first exec, warm exec and teardown per hardening setting, the settings interleaved round by round."""
    backends = {name: DockerBackend(SandboxConfig(**changes), client) for name, changes in HARDENING.items()}
    for backend in backends.values():  # each backend's first sandbox probes the user and the engine's quota
        backend.open(task, {"run_id": run_id, "rollout_id": "bench-task/warm"}).close()
    times: dict[str, dict[str, list[float]]] = {
        name: {"open": [], "first": [], "warm": [], "close": []} for name in backends
    }
    for i in range(rounds):
        for name, backend in backends.items():
            box, start = _timed(backend.open, task, {"run_id": run_id, "rollout_id": f"bench-task/h{i}"})
            first, first_s = _timed(box.exec, "true")
            assert first.ok, first.output
            warm = [_timed(box.exec, "true")[1] for _ in range(5)]
            _, close_s = _timed(box.close)
            row = times[name]
            row["open"].append(start)
            row["first"].append(first_s)
            row["warm"].append(statistics.median(warm))
            row["close"].append(close_s)
    box = backends["all (the defaults)"].open(task, {"run_id": run_id, "rollout_id": "bench-task/size"})
    sizes = [_timed(layer_size, client.api, box._cid)[1] for _ in range(10)]
    box.close()
    print(f"disk watchdog, one measurement of the writable layer: {statistics.median(sizes):.4f} s (median of 10)")
    print(f"-- hardening, {rounds} sandboxes each (median s; containers/s = 1 / (open + first exec + close)):")
    print(f"{'setting':28s}{'open':>8s}{'1st exec':>10s}{'warm exec':>11s}{'close':>8s}{'cont/s':>8s}")
    for name, row in times.items():
        cycle = [a + b + c for a, b, c in zip(row["open"], row["first"], row["close"], strict=True)]
        med = {k: statistics.median(v) for k, v in row.items()}
        print(
            f"{name:28s}{med['open']:8.3f}{med['first']:10.3f}{med['warm']:11.4f}{med['close']:8.3f}"
            f"{1 / statistics.median(cycle):8.2f}"
        )


def _timed(fn, *args):
    started = time.monotonic()
    value = fn(*args)
    return value, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force-base", action="store_true", help="time a full base image build (scratch tag)")
    parser.add_argument("--starts", type=int, default=5, help="containers to start for the start/exec/teardown figures")
    parser.add_argument("--keep-image", action="store_true", help="keep the cold-built task image")
    parser.add_argument("--hardening", type=int, default=0, help="sandboxes per hardening setting (0: skip)")
    args = parser.parse_args()

    client = docker_client()
    run_id = f"bench-{uuid.uuid4().hex[:8]}"
    print(f"engine {client.version()['Version']}, run {run_id}")

    if args.force_base:
        scratch = f"agentbon/base:bench-{uuid.uuid4().hex[:8]}"
        seconds = build_base_image(client, scratch, say=lambda line: None)
        client.images.remove(scratch)
        print(f"base image build (forced):        {seconds:8.1f} s")
    tag, seconds = _timed(ensure_base_image, client)
    print(f"base image {tag}: {'cached' if seconds < 5 else 'built'}  {seconds:8.3f} s")

    with tempfile.TemporaryDirectory(prefix="agentbon-bench-") as tmp:
        sha = _repo(Path(tmp) / "repo")
        task = Task(
            task_id="bench-task",
            problem_statement="benchmark",
            repo=RepoSource(url=str(Path(tmp) / "repo"), base_commit=sha),
            grade=TestSet(pass_to_pass=["tests/test_mod0.py::test_f"]),
        )
        config = SandboxConfig()
        image, cold = _timed(DockerBackend(config, client).image_for, task)
        assert image.built, "expected a cold build"
        again, cached = _timed(DockerBackend(config, client).image_for, task)  # a new backend: no in-process memo
        assert not again.built
        print(f"task image build, cold:           {cold:8.2f} s")
        print(f"task image, cached (new backend): {cached:8.3f} s")

        backend = DockerBackend(config, client)
        backend.image_for(task)
        starts, firsts, warms, diffs, tests, closes = [], [], [], [], [], []
        for i in range(args.starts):
            box, start = _timed(backend.open, task, {"run_id": run_id, "rollout_id": f"bench-task/{i}"})
            first, first_s = _timed(box.exec, "true")
            assert first.ok
            warm = [_timed(box.exec, "true")[1] for _ in range(5)]
            box.write_file("pkg/mod0.py", "def f0(x):\n    return x\n")
            _, diff_s = _timed(box.diff)
            result, test_s = _timed(box.exec, "python3 -m pytest -q -p no:cacheprovider tests")
            _, close_s = _timed(box.close)
            starts.append(start)
            firsts.append(first_s)
            warms.append(statistics.median(warm))
            diffs.append(diff_s)
            tests.append(test_s)
            closes.append(close_s)

        def row(name: str, values: list[float]) -> None:
            print(f"{name:34s}{statistics.median(values):8.3f} s  (min {min(values):.3f}, max {max(values):.3f})")

        print(f"-- over {args.starts} sandboxes (median):")
        row("container start (open):", starts)
        row("first exec:", firsts)
        row("start + first exec:", [a + b for a, b in zip(starts, firsts, strict=True)])
        row("warm exec (true):", warms)
        row("diff (one file changed):", diffs)
        row("pytest, 20 tiny test files:", tests)
        row("teardown (close):", closes)

        if args.hardening:
            hardening_figures(client, task, args.hardening, run_id)

        left = client.containers.list(all=True, filters={"label": [f"agentbon.run_id={run_id}"]})
        every = client.containers.list(all=True, filters={"label": ["agentbon=1"]})
        print(f"agentbon containers left by this benchmark: {len(left)} (all agentbon containers now: {len(every)})")
        if not args.keep_image:
            client.images.remove(image.ref)
    print(f"base tag for this recipe: {base_tag()}")


if __name__ == "__main__":
    main()
