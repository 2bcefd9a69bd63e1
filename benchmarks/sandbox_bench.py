"""Sandbox figures on this machine: base image, task image cold and cached, container start, exec, teardown, leftovers.

    python benchmarks/sandbox_bench.py [--force-base] [--starts 5] [--keep-image]

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


def _timed(fn, *args):
    started = time.monotonic()
    value = fn(*args)
    return value, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--force-base", action="store_true", help="time a full base image build (scratch tag)")
    parser.add_argument("--starts", type=int, default=5, help="containers to start for the start/exec/teardown figures")
    parser.add_argument("--keep-image", action="store_true", help="keep the cold-built task image")
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

        left = client.containers.list(all=True, filters={"label": [f"agentbon.run_id={run_id}"]})
        every = client.containers.list(all=True, filters={"label": ["agentbon=1"]})
        print(f"agentbon containers left by this benchmark: {len(left)} (all agentbon containers now: {len(every)})")
        if not args.keep_image:
            client.images.remove(image.ref)
    print(f"base tag for this recipe: {base_tag()}")


if __name__ == "__main__":
    main()
