"""The process backend, for machines with no container engine: a git clone in a temp dir and host processes.

Weaker isolation, and reported as such: rlimits (address space, CPU, processes where the kernel honours it) and
a network namespace where ``unshare`` is allowed, but the host's filesystem is visible to every command.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import git

from agentbon.config import SandboxConfig
from agentbon.errors import ImageBuildError, SandboxGone
from agentbon.files import write_atomic
from agentbon.sandbox.common import GIT_IDENTITY, Channel, container_labels, file_lock, matches, parse_bytes, slug
from agentbon.sandbox.patch import take_patch
from agentbon.sandbox.pexec import kill_all, limits_prefix, netns_prefix, run_process, session_processes
from agentbon.sandbox.repo import prepare_repo
from agentbon.types import ExecResult, Task

log = logging.getLogger(__name__)

ISOLATION = "process (weaker isolation)"
PREFIX = "agentbon-sbx-"
META = ".agentbon.json"


def _cache_root() -> Path:
    return Path(os.environ.get("AGENTBON_CACHE") or Path.home() / ".cache" / "agentbon") / "repos"


class ProcessSandbox:
    """A clone of the prepared repository in a temp dir; commands are host processes (``protocols.Sandbox``)."""

    isolation = ISOLATION

    def __init__(
        self,
        root: Path,
        base_commit: str,
        config: SandboxConfig,
        venv: Path | None = None,
        env: dict[str, str] | None = None,
    ):
        self.root = root.resolve()
        self.id = self.name = root.name
        self.workdir = str(root / "repo")
        self.base_commit = base_commit
        self.config = config
        self.setup_s = 0.0
        self.started_at = time.time()
        self.closed = False
        self.channel = Channel(str(self.root / "channel"), str(self.root / "channel")) if config.channel else None
        """``sandbox.channel``: a folder in the sandbox's own directory (the same path for host and commands)."""
        self.agent_dir = config.agent_dir
        """``sandbox.agent_dir``, as it is on the host (commands see the host's filesystem)."""
        self._sessions: set[int] = set()
        path = [str(venv / "bin")] if venv else []
        path += [str(Path(sys.executable).parent), os.environ.get("PATH", "/usr/bin:/bin")]
        self._env = {
            "PATH": os.pathsep.join(path),
            "HOME": str(root / "home"),
            "TMPDIR": str(root / "tmp"),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1",
            "PAGER": "cat",
            "GIT_PAGER": "cat",
            "TERM": "dumb",
            **GIT_IDENTITY,
            **(env or {}),
        }

    def _check(self) -> None:
        if self.closed or not (self.root / "repo").is_dir():
            raise SandboxGone(f"sandbox {self.name} is gone")

    def _path(self, path: str) -> Path:
        full = (Path(self.workdir) / path).resolve()
        if full != self.root and self.root not in full.parents:
            raise PermissionError(f"{path}: outside the sandbox ({self.root})")
        return full

    def exec(
        self, command: str, timeout: float | None = None, workdir: str | None = None, user: str | None = None
    ) -> ExecResult:
        """Run ``command`` with bash under ``timeout -k`` and the sandbox's limits.

        ``user`` is accepted and has no effect: every command runs as the invoking user (weaker isolation).
        """
        self._check()
        limit = self.config.exec_timeout_s if timeout is None else timeout
        prefix = limits_prefix(parse_bytes(self.config.memory), limit + 5, self.config.pids)
        if self.config.network == "none":
            prefix += list(netns_prefix())
        try:
            cwd = str(self._path(workdir)) if workdir else self.workdir
        except PermissionError as e:
            return ExecResult(exit_code=126, output=f"{e}\n")
        if not Path(cwd).is_dir():  # as docker exec answers: a failed command, not an exception
            return ExecResult(exit_code=126, output=f"cannot chdir to {workdir}: no such directory\n")
        result, session = run_process(command, limit, cwd, self._env, prefix, self.config.output_limit)
        self._sessions.add(session)
        return result

    def write_file(self, path: str, content: str | bytes) -> None:
        """Write a file (relative to ``workdir``; parents created)."""
        self._check()
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)

    def read_file(self, path: str) -> bytes:
        """A file's bytes (relative to ``workdir``)."""
        self._check()
        return self._path(path).read_bytes()

    def copy_in(self, host_path: str, dest: str) -> None:
        """Copy a host file or directory into the sandbox."""
        self._check()
        target = self._path(dest)
        target.parent.mkdir(parents=True, exist_ok=True)
        if Path(host_path).is_dir():
            shutil.copytree(host_path, target, symlinks=True, dirs_exist_ok=True)
        else:
            shutil.copyfile(host_path, target)

    def copy_out(self, src: str, host_dest: str) -> None:
        """Copy a sandbox file or directory to the host."""
        self._check()
        source = self._path(src)
        if source.is_dir():
            shutil.copytree(source, host_dest, symlinks=True, dirs_exist_ok=True)
        else:
            dest = Path(host_dest) / source.name if Path(host_dest).is_dir() else Path(host_dest)
            shutil.copyfile(source, dest)

    def diff(self) -> str:
        """The working tree against the base commit as a binary-safe git diff, new files included."""
        self._check()
        return take_patch(
            lambda cmd, t: self.exec(cmd, timeout=t), self.read_file, self.base_commit, tmp_dir=str(self.root / "tmp")
        )

    def close(self) -> None:
        """Kill what the sandbox left running and delete it; safe to call twice."""
        if self.closed:
            return
        self.closed = True
        remove_sandbox_dir(self.root, self._sessions)

    def __enter__(self) -> ProcessSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def remove_sandbox_dir(root: Path, sessions: set[int] | None = None) -> None:
    """Kill the processes a sandbox started (by session, or working directory under it) and delete it."""
    kill_all(session_processes(sessions or set(), str(root)))
    shutil.rmtree(root, ignore_errors=True)


class ProcessBackend:
    """Sandboxes as temp-dir clones and host processes (``protocols.SandboxBackend``); weaker isolation."""

    isolation = ISOLATION

    def __init__(self, config: SandboxConfig | None = None, cache_dir: Path | None = None):
        self.config = config or SandboxConfig()
        self.cache_dir = Path(cache_dir) if cache_dir else _cache_root()
        log.warning("sandbox backend: %s: commands run as host processes (no container engine)", ISOLATION)

    def _prepared(self, task: Task) -> Path:
        spec = json.dumps(
            [
                str(Path(task.repo.url).resolve()) if Path(task.repo.url).exists() else task.repo.url,
                task.repo.base_commit,
                task.environment.python_packages,
            ]
        )
        return self.cache_dir / f"{slug(task.task_id, 60)}-{hashlib.sha256(spec.encode()).hexdigest()[:12]}"

    def prepare(self, task: Task) -> str:
        """Clone the task's repository (hygienic history) and make its venv, once; return its directory."""
        if task.environment.image:
            raise ImageBuildError(
                f"{task.task_id}: environment.image {task.environment.image!r} needs the docker "
                "backend (sandbox.backend=docker)"
            )
        where = self._prepared(task)
        if (where / "ready.json").is_file():
            return str(where)
        log.warning("task %s: preparing for the %s backend", task.task_id, ISOLATION)
        with file_lock(str(where)):
            if (where / "ready.json").is_file():
                return str(where)
            shutil.rmtree(where, ignore_errors=True)
            where.mkdir(parents=True)
            sha = prepare_repo(task.repo.url, task.repo.base_commit, where / "repo")
            if task.environment.python_packages:
                self._venv(task, where)
            write_atomic(where / "ready.json", json.dumps({"base_commit": sha, "task_id": task.task_id}))
        return str(where)

    @staticmethod
    def _venv(task: Task, where: Path) -> None:
        venv = where / "venv"
        steps = [
            [sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *task.environment.python_packages],
        ]
        for argv in steps:
            proc = subprocess.run(argv, capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                raise ImageBuildError(f"{task.task_id}: {' '.join(argv[:4])} failed: {proc.stderr[-2000:]}")

    def open(self, task: Task, labels: dict[str, str] | None = None) -> ProcessSandbox:
        """A fresh clone of the prepared repository; the task's setup commands run in it."""
        where = Path(self.prepare(task))
        sha = json.loads((where / "ready.json").read_text())["base_commit"]
        started = time.monotonic()
        root = Path(tempfile.mkdtemp(prefix=PREFIX))
        write_atomic(root / META, json.dumps({"labels": container_labels(labels, task.task_id), "pid": os.getpid()}))
        for sub in ("home", "tmp", "channel") if self.config.channel else ("home", "tmp"):
            (root / sub).mkdir()
        repo = git.Repo.clone_from(str(where / "repo"), root / "repo", no_hardlinks=True, quiet=True)
        repo.git.remote("remove", "origin")  # the clone's only ref is then the branch at the base commit
        repo.git.reflog("expire", "--expire=now", "--all")
        repo.close()
        venv = where / "venv" if (where / "venv").is_dir() else None
        sandbox = ProcessSandbox(root, sha, self.config, venv, task.environment.env)
        for command in task.environment.setup:
            result = sandbox.exec(command, timeout=self.config.setup_timeout_s)
            if not result.ok:
                sandbox.close()
                raise ImageBuildError(
                    f"{task.task_id}: setup command {command!r} failed (exit {result.exit_code}): "
                    f"{result.output[-2000:]}"
                )
        sandbox.setup_s = time.monotonic() - started
        return sandbox

    def reap(self, labels: dict[str, str] | None = None) -> int:
        """Delete leftover process sandboxes with the labels (all agentbon ones by default)."""
        return reap_process_sandboxes(labels)


def reap_process_sandboxes(labels: dict[str, str] | None = None) -> int:
    """Delete the temp-dir sandboxes whose labels match; return how many."""
    removed = 0
    for root in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            found = json.loads((root / META).read_text()).get("labels", {})
        except (OSError, ValueError):
            continue
        if matches(found, labels):
            remove_sandbox_dir(root)
            removed += 1
    return removed
