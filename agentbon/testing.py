"""Fakes shipped in the package for tests (style.md §11): a scripted model, a fake sandbox. Never on the product path."""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from agentbon.errors import SandboxGone
from agentbon.protocols import ChatResponse
from agentbon.types import ExecResult, Usage

Reply = str | Callable[[Sequence[dict[str, Any]]], str] | BaseException


class ScriptedModel:
    """Answers from a script: a list of replies (strings, callables of the messages, or exceptions to raise).

    With ``cycle=True`` the script repeats; otherwise running past its end raises ``IndexError``.
    Token usage is counted as whitespace-separated words, so limits can be tested.
    """

    def __init__(self, replies: Sequence[Reply], name: str = "scripted", cycle: bool = False):
        self.name = name
        self._replies = itertools.cycle(replies) if cycle else iter(replies)
        self.calls: list[dict[str, Any]] = []

    def chat(self, messages: Sequence[dict[str, Any]], *, seed: int | None = None, **sampling: Any) -> ChatResponse:
        self.calls.append({"messages": list(messages), "seed": seed, **sampling})
        try:
            reply = next(self._replies)
        except StopIteration:
            raise IndexError(f"ScriptedModel {self.name!r} ran out of replies after {len(self.calls) - 1}") from None
        if isinstance(reply, BaseException):
            raise reply
        text = reply(messages) if callable(reply) else reply
        prompt = sum(len(str(m.get("content", "")).split()) for m in messages)
        return ChatResponse(
            content=text,
            usage=Usage(prompt_tokens=prompt, completion_tokens=len(text.split()), calls=1),
            finish_reason="stop",
        )


def init_repo(path: str | Path, files: dict[str, str]) -> str:
    """Make a git repository at ``path`` holding ``files`` in one commit; return the commit sha."""
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, check=True, capture_output=True,
                          text=True).stdout.strip()


class FakeSandbox:
    """A sandbox over a local git checkout: commands run as host subprocesses (no isolation; tests only).

    Behaves like the real ones where the agent can tell: failure is an ``ExecResult``, a timeout kills
    the whole process group and reports ``timed_out`` with exit code 124, output is capped head and
    tail, and after ``close()`` (or ``kill()``, which simulates a container that died) calls raise
    ``SandboxGone``. ``execs`` records every command run.
    """

    isolation = "fake (none)"

    def __init__(self, repo: str | Path, base_commit: str | None = None, output_limit: int = 20_000,
                 default_timeout: float = 30.0):
        self.workdir = str(Path(repo).resolve())
        self.id = f"fake-{os.path.basename(self.workdir)}"
        self.base_commit = base_commit or self._git("rev-parse", "HEAD").strip()
        self.output_limit, self.default_timeout = output_limit, default_timeout
        self.execs: list[str] = []
        self._gone = False

    def _git(self, *args: str) -> str:
        return subprocess.run(["git", *args], cwd=self.workdir, check=True, capture_output=True, text=True).stdout

    def _alive(self) -> None:
        if self._gone:
            raise SandboxGone(f"sandbox {self.id} is gone")

    def _path(self, path: str) -> Path:
        return Path(path) if os.path.isabs(path) else Path(self.workdir) / path

    def exec(self, command: str, timeout: float | None = None, workdir: str | None = None) -> ExecResult:
        self._alive()
        self.execs.append(command)
        t0 = time.monotonic()
        proc = subprocess.Popen(["bash", "-c", command], cwd=workdir or self.workdir, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        timed_out = False
        try:
            out, _ = proc.communicate(timeout=timeout or self.default_timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)  # the group: a shell's children must not hold the pipe open
            out, _ = proc.communicate()
        text = out.decode("utf-8", errors="replace")
        truncated = len(text) > self.output_limit
        if truncated:
            half = self.output_limit // 2
            text = text[:half] + "\n[... output truncated ...]\n" + text[-half:]
        return ExecResult(exit_code=124 if timed_out else proc.returncode, output=text, timed_out=timed_out,
                          truncated=truncated, duration_s=time.monotonic() - t0)

    def write_file(self, path: str, content: str | bytes) -> None:
        self._alive()
        target = self._path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode() if isinstance(content, str) else content)

    def read_file(self, path: str) -> bytes:
        self._alive()
        return self._path(path).read_bytes()

    def diff(self) -> str:
        self._alive()
        self._git("add", "-A")
        return self._git("diff", "--cached", "--binary", self.base_commit)

    def kill(self) -> None:
        """Simulate a sandbox that died under the agent."""
        self._gone = True

    def close(self) -> None:
        self._gone = True

    def __enter__(self) -> FakeSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
