"""Test doubles shipped in the package (docs/architecture.md): a scripted model and a fake sandbox here, a slow engine
(engine.py) and a scripted HTTP model server (http.py). Never in a run."""

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

    def exec(self, command: str, timeout: float | None = None, workdir: str | None = None,
             user: str | None = None) -> ExecResult:
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


# ------------------------------------------------------------------ orchestration fakes (agentbon.orchestrate)


class PlanReply:
    """A ScriptedModel reply that looks up the rollout id named in the last message (``rollout <id>``).

    ``table`` maps rollout ids to reply texts; others get ``default``. Picklable, so it travels to Ray workers.
    """

    def __init__(self, table: dict[str, str], default: str = "no fix"):
        self.table, self.default = dict(table), default

    def __call__(self, messages: Sequence[dict[str, Any]]) -> str:
        text = str(messages[-1].get("content", ""))
        rid = text.split("rollout ", 1)[1].split()[0] if "rollout " in text else ""
        return self.table.get(rid, self.default)


def planned_model(config: Any, table: dict[str, str] | None = None, default: str = "no fix") -> ScriptedModel:
    """A ``Factories.model``: a ScriptedModel answering each rollout from ``table`` (use with functools.partial)."""
    return ScriptedModel([PlanReply(table or {}, default)], name="planned", cycle=True)


class FakeAgent:
    """One model call, whose reply is written to ``answer.txt``; directives in the reply drive the test.

    ``sleep:<s>`` runs ``sleep`` in the sandbox; ``hold:<path>`` waits until the file ``path`` exists (a gate the
    test opens once what it waits for happened); ``hang`` loops in Python forever (no sandbox command);
    ``block`` sleeps an hour inside one C call (only killing the process stops it); ``crash`` kills the
    worker process (a Ray worker dying), ``crash-once`` only on the first attempt; ``server-down`` raises
    ``ServerFailure``; ``raise`` fails like a broken agent would; ``docker-api-error`` raises the Docker SDK's
    ``APIError`` (a daemon 500); ``model-404`` raises ``EndpointMisconfigured``; ``too-long`` raises
    ``ContextLengthExceeded``; ``disk-full`` raises ``OSError(ENOSPC)`` on the worker's side.
    """

    def __init__(self, config: Any = None):
        self.config = config

    def run(self, task: Any, sandbox: Any, model: Any, spec: Any) -> Any:
        from agentbon.protocols import AgentResult

        messages: list[dict[str, Any]] = [
            {"role": "user", "content": f"{task.problem_statement}\nrollout {spec.rollout_id} seed {spec.seed}"}
        ]
        reply = model.chat(messages, seed=spec.seed)
        messages.append({"role": "assistant", "content": reply.content, "extra": {"usage": reply.usage.model_dump()}})
        sandbox.write_file("answer.txt", reply.content + "\n")
        for word in reply.content.split():
            if word.startswith("sleep:"):
                sandbox.exec(f"sleep {float(word[6:])}", timeout=3600)
            elif word.startswith("hold:"):
                while not os.path.exists(word[5:]):
                    time.sleep(0.05)
            elif word == "hang":
                while True:
                    time.sleep(0.05)
            elif word == "block":
                time.sleep(3600)
            elif word == "crash" or (word == "crash-once" and spec.attempt == 1):
                os._exit(1)
            elif word == "server-down":
                from agentbon.errors import ServerFailure

                raise ServerFailure("fake model server is down")
            elif word == "raise":
                raise ValueError("the agent broke")
            elif word in _FAULTS:
                raise _FAULTS[word]()
        return AgentResult(messages=messages, status="submitted", exit_status="Submitted", steps=1, usage=reply.usage)


def _docker_500() -> BaseException:
    import docker.errors

    return docker.errors.APIError("500 Server Error: Internal Server Error (fake daemon failure)")


def _model_404() -> BaseException:
    from agentbon.errors import EndpointMisconfigured

    return EndpointMisconfigured("the endpoint does not serve model 'nope' (HTTP 404)")


def _too_long() -> BaseException:
    from agentbon.errors import ContextLengthExceeded

    return ContextLengthExceeded("prompt longer than the context window")


def _disk_full() -> BaseException:
    import errno

    return OSError(errno.ENOSPC, "No space left on device")


_FAULTS: dict[str, Callable[[], BaseException]] = {
    "docker-api-error": _docker_500, "model-404": _model_404, "too-long": _too_long, "disk-full": _disk_full,
}


def _permission() -> BaseException:
    import errno

    return PermissionError(errno.EACCES, "Permission denied", "/var/cache/agentbon")


def _reset() -> BaseException:
    import errno

    return ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")


def _read_only() -> BaseException:
    import errno

    return OSError(errno.EROFS, "Read-only file system", "/tmp/agentbon-sandbox")


def _clone_failed() -> BaseException:
    return subprocess.CalledProcessError(128, ["git", "clone", "-q", "repo", "sandbox"], stderr=b"fatal: early EOF")


SETUP_FAULTS: dict[str, Callable[[], BaseException]] = {
    "gone": lambda: SandboxGone("fake sandbox died at start"), "permission": _permission, "reset": _reset,
    "read-only": _read_only, "clone": _clone_failed,
}
"""What ``FakeBackend`` raises for a preparation or sandbox start it was told to fail (``prepare_error``,
``open_error``): none of these but ``gone`` is in the failure taxonomy's table."""


class FakeBackend:
    """Sandboxes as git clones of the task's repository under ``root`` (a process-backed fake for orchestration).

    Each live sandbox is a folder holding its labels, so ``reap`` works across processes and tests can
    count leftovers. ``open_delay_s`` simulates container start; ``fail_open`` maps rollout ids to how many
    attempts fail with ``open_error`` (a ``SETUP_FAULTS`` key) before one succeeds. ``prepare`` clones the task's
    repository at its base commit as the real backends do (a broken repository fails there, with git's
    ``CalledProcessError``); ``fail_prepare`` maps task ids to how many preparations fail with ``prepare_error``
    first (counted under ``root``, across worker processes).
    """

    isolation = "fake (none)"

    def __init__(self, config: Any = None, root: str | Path = "/tmp/agentbon-fake", open_delay_s: float = 0.0,
                 fail_open: dict[str, int] | None = None, open_error: str = "gone",
                 fail_prepare: dict[str, int] | None = None, prepare_error: str = "clone"):
        self.config, self.root = config, Path(root)
        self.open_delay_s, self.fail_open = open_delay_s, dict(fail_open or {})
        self.open_error, self.prepare_error = SETUP_FAULTS[open_error], SETUP_FAULTS[prepare_error]
        self.fail_prepare = dict(fail_prepare or {})

    def prepare(self, task: Any) -> str:
        import tempfile

        if self.fail_prepare.get(task.task_id):
            counter = self.root / "prepare-attempts" / task.task_id
            counter.parent.mkdir(parents=True, exist_ok=True)
            with open(counter, "a") as f:
                f.write(".")
            if counter.stat().st_size <= self.fail_prepare[task.task_id]:
                raise self.prepare_error()
        with tempfile.TemporaryDirectory(prefix="agentbon-fake-prepare-") as tmp:
            subprocess.run(["git", "clone", "-q", "--bare", str(task.repo.url), tmp], check=True, capture_output=True)
            subprocess.run(["git", "cat-file", "-e", f"{task.repo.base_commit}^{{commit}}"], cwd=tmp, check=True,
                           capture_output=True)  # fmt: skip
        return f"fake:{task.task_id}"

    def open(self, task: Any, labels: dict[str, str]) -> FakeSandbox:
        import json
        import uuid

        if int(labels.get("attempt", "1")) <= self.fail_open.get(labels.get("rollout", ""), 0):
            raise self.open_error()
        time.sleep(self.open_delay_s)
        where = self.root / "live" / uuid.uuid4().hex[:12]
        where.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(task.repo.url), str(where / "repo")], check=True, capture_output=True)
        subprocess.run(["git", "checkout", "-q", task.repo.base_commit], cwd=where / "repo", check=True)
        (where / "labels.json").write_text(json.dumps(labels))
        sandbox = _LabelledSandbox(where / "repo", task.repo.base_commit)
        sandbox.home = where
        return sandbox

    def live(self, labels: dict[str, str] | None = None) -> list[Path]:
        """Folders of live sandboxes matching the labels."""
        import json

        out = []
        for d in sorted((self.root / "live").glob("*/labels.json")):
            try:
                found = json.loads(d.read_text())
            except (OSError, ValueError):
                continue
            if all(found.get(k) == v for k, v in (labels or {}).items()):
                out.append(d.parent)
        return out

    def reap(self, labels: dict[str, str] | None = None) -> int:
        import shutil

        gone = self.live(labels)
        for d in gone:
            shutil.rmtree(d, ignore_errors=True)
        return len(gone)


class _LabelledSandbox(FakeSandbox):
    home: Path

    def close(self) -> None:
        import shutil

        super().close()
        shutil.rmtree(self.home, ignore_errors=True)


class FakeVerifier:
    """Passes a patch iff it adds a line containing ``FIX``; with ``log`` set, appends a line per verification.

    A patch adding ``VERIFY-DOWN`` cannot be verified: the verifier raises ``EngineUnavailable`` every time.
    """

    def __init__(self, config: Any = None, log: str | Path | None = None, delay_s: float = 0.0):
        self.config, self.log, self.delay_s = config, log, delay_s

    def verify(self, task: Any, rollout: Any, role: Any) -> Any:
        from agentbon.errors import EngineUnavailable
        from agentbon.types import Verdict, patch_hash

        time.sleep(self.delay_s)
        if self.log:
            with open(self.log, "a") as f:
                f.write(f"{rollout.rollout_id} {role}\n")
        if "VERIFY-DOWN" in rollout.patch:
            raise EngineUnavailable("fake engine down during verification")
        added = [line for line in rollout.patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
        ok = any("FIX" in line for line in added)
        return Verdict(
            run_id=rollout.run_id, task_id=task.task_id, rollout_id=rollout.rollout_id, role=role,
            status="pass" if ok else "fail", patch_hash=patch_hash(rollout.patch), reason="FIX" if ok else "no FIX",
        )


class FakeSelector:
    """Picks the first candidate whose evidence passed (the grade, for the ``oracle``), else the first one.

    A selector named ``critic`` asks a fake judge first: while the file ``judge_down`` exists, the judge call for each
    task named in it (one id a line) raises ``ServerFailure``, as a judge whose server is down.
    """

    def __init__(self, name: str, config: Any = None, store: Any = None, judge_down: str | Path | None = None):
        self.name, self.oracle = name, name == "oracle"
        self.judge_down = Path(judge_down) if judge_down else None

    def select(self, task: Any, candidates: Sequence[Any]) -> Any:
        from agentbon.types import Selection

        if self.name == "critic" and self.judge_down is not None and self.judge_down.exists():
            if task.task_id in self.judge_down.read_text().split():
                from agentbon.errors import ServerFailure

                raise ServerFailure("fake judge: connection refused")

        def passed(c: Any) -> bool:
            v = c.grade if self.oracle else c.evidence
            return v is not None and v.status == "pass"

        winner = next((c for c in candidates if passed(c)), candidates[0] if candidates else None)
        return Selection(
            run_id=winner.rollout.run_id if winner else "", task_id=task.task_id, selector=self.name,
            winner=winner.rollout.rollout_id if winner else None, oracle=self.oracle,
        )


class FakeService:
    """A ``Factories.server`` for a fake model: no endpoint to start; counts restarts in a file if given."""

    def __init__(self, config: Any, restarts: str | Path | None = None, restart_fails: str = ""):
        """``restart_fails``: ``server`` (a ServerFailure, as a server that does not come back) or ``bug`` (any
        other exception); empty: restarts succeed."""
        self.config, self.restarts, self.restart_fails = config, restarts, restart_fails

    def launch(self, *, ray_address: str | None = None) -> None:
        """Nothing to launch before Ray."""

    def pids(self) -> set[int]:
        return set()

    def start(self) -> Any:
        return self.config.model_copy(update={"endpoint": self.config.endpoint or "fake://model"})

    def restart(self) -> None:
        if self.restarts:
            with open(self.restarts, "a") as f:
                f.write("restart\n")
        if self.restart_fails == "server":  # as a server that does not come back within its ready timeout
            from agentbon.errors import ServerFailure

            raise ServerFailure("fake did not answer on fake://model within 0s")
        if self.restart_fails == "bug":
            raise RuntimeError("bug in restart")

    def stop(self) -> None:
        pass


def no_report(store: Any) -> None:
    """A ``Factories.report`` that writes nothing."""
    return None


class TaskReply:
    """A ScriptedModel reply chosen by task and step, so real agents can be scripted across Ray workers.

    ``table`` maps a text found in the conversation's first user message (e.g. a phrase of the problem
    statement) to the replies of steps 0, 1, ... (the last one repeats); other tasks get ``default``.
    """

    def __init__(self, table: dict[str, list[str]], default: list[str]):
        self.table, self.default = {k: list(v) for k, v in table.items()}, list(default)

    def __call__(self, messages: Sequence[dict[str, Any]]) -> str:
        first = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
        step = sum(1 for m in messages if m.get("role") == "assistant")
        replies = next((r for key, r in self.table.items() if key in first), self.default)
        return replies[min(step, len(replies) - 1)]


def task_model(config: Any, table: dict[str, list[str]], default: list[str]) -> ScriptedModel:
    """A ``Factories.model``: a ScriptedModel answering by task and step (use with functools.partial)."""
    return ScriptedModel([TaskReply(table, default)], name="task-scripted", cycle=True)
