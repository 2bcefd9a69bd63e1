"""One command in a container: ``timeout -k`` inside, output capped while it streams, a backstop outside."""

from __future__ import annotations

import queue
import re
import threading
import time
from typing import Any, NamedTuple

import docker

from agentbon.config import SandboxConfig
from agentbon.sandbox.common import KILL_GRACE_S, OutputCap, is_timeout, timeout_argv
from agentbon.sandbox.engine import gone_or_raise
from agentbon.sandbox.resident import Resident, Unavailable
from agentbon.types import ExecResult

BACKSTOP_S = 15.0
"""Seconds past ``timeout -k`` after which the host stops waiting (a frozen container, a stuck engine)."""
LINGER_S = 3.0
"""How long output is still read after the command ended (a background process may hold the pipe forever). Not
shorter: on a loaded machine the reader thread can wait a second or more for a CPU, and the stream is closed
after this, with whatever the reader had not taken yet lost (a verification's first command once came back
with exit 0 and no output under load)."""
POLL_MAX_S = 5.0
"""Longest interval between checks that a command whose output stream is still open is still running."""
OOM_FILES = "/sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events"  # cgroup v1, v2


class Captured(NamedTuple):
    """A command's exit and raw output bytes (``Executor.capture``)."""

    exit_code: int
    data: bytes
    timed_out: bool
    truncated: bool


class ByteSink:
    """Keeps the first ``limit`` bytes of a stream exactly, counting the rest."""

    def __init__(self, limit: int):
        self.limit, self.data, self.dropped = limit, bytearray(), 0

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        self.data += chunk[: max(room, 0)]
        self.dropped += max(len(chunk) - max(room, 0), 0)

    @property
    def truncated(self) -> bool:
        return self.dropped > 0


RESIDENT_RESTARTS = 3
"""Executors started again in one sandbox after one went away (a command may kill it); then one ``exec`` each."""


class Executor:
    """Runs commands in one container; remembers the container's OOM-kill count to tell OOM from other kills.

    With ``config.executor == "resident"`` each user's commands go to one resident executor (``resident.py``)
    started on first use; without one (no ``python3`` in the image) each command is one engine ``exec``.
    """

    def __init__(self, api: docker.APIClient, container_id: str, config: SandboxConfig):
        self.api, self.cid, self.config = api, container_id, config
        self.oom_kills = 0
        self._residents: dict[str, Resident] = {}
        self._starts = 0
        self._oom_told: bool | None = None
        self.resident_note = "" if config.executor == "resident" else "off (sandbox.executor=exec)"
        """Why commands go one ``exec`` each (empty while a resident executor is used or may be)."""

    def close(self) -> None:
        """Close the resident executors' connections (the container's removal ends them in any case)."""
        for resident in self._residents.values():
            resident.close()
        self._residents.clear()

    def connect(self, user: str) -> bool:
        """Start ``user``'s resident executor now (a warm sandbox's); False when commands will go one exec each."""
        return self._resident(user) is not None

    def ready(self, user: str) -> bool:
        """True when ``user``'s resident executor is connected and idle (no engine call to find out)."""
        found = self._residents.get(user)
        return found is not None and found.idle()

    @property
    def mode(self) -> str:
        """``resident`` or why commands go one ``exec`` each."""
        if self.resident_note:
            return f"exec: {self.resident_note}"
        return "resident" if self._residents or self._starts else "exec: no command ran"

    def _resident(self, user: str) -> Resident | None:
        if self.resident_note:
            return None
        found = self._residents.get(user)
        if found is not None and found.alive:
            return found
        if self._starts > RESIDENT_RESTARTS:
            self.resident_note = f"{self._starts} resident executors went away: one exec per command from now on"
            return None
        self._starts += 1
        try:
            self._residents[user] = Resident(self.api, self.cid, user, self.config.setup_timeout_s)
        except Unavailable as e:
            self.resident_note = str(e)
            return None
        except docker.errors.APIError as e:
            raise gone_or_raise(e, f"resident executor in container {self.cid[:12]}") from e
        return self._residents[user]

    def run(self, command: str, timeout: float, cwd: str, user: str = "") -> ExecResult:
        """Run ``command`` (as ``user``, ``uid:gid``; the container's own user when empty); a failed or timed-out
        command is data, a vanished container raises ``SandboxGone``."""
        cap = OutputCap(self.config.output_limit)
        exit_code, duration, timed_out = self._run(command, timeout, cwd, cap, user)
        output = cap.text()
        if timed_out:
            output += f"\n[agentbon: command timed out after {timeout:g}s and was killed]"
        elif exit_code == 137 and (self._new_oom_kill() if self._oom_told is None else self._oom_told):
            output += f"\n[agentbon: killed: out of memory (the sandbox's limit is {self.config.memory})]"
        return ExecResult(
            exit_code=exit_code,
            output=output,
            timed_out=timed_out,
            truncated=cap.truncated,
            duration_s=round(duration, 3),
        )

    def capture(self, command: str, timeout: float, cwd: str, limit: int, user: str = "") -> Captured:
        """Run ``command`` and keep its raw output bytes (the first ``limit``), for payloads such as a patch."""
        sink = ByteSink(limit)
        exit_code, _, timed_out = self._run(command, timeout, cwd, sink, user)
        return Captured(exit_code, bytes(sink.data), timed_out, sink.truncated)

    def _run(
        self, command: str, timeout: float, cwd: str, sink: OutputCap | ByteSink, user: str = ""
    ) -> tuple[int, float, bool]:
        """Run ``command`` feeding its output to ``sink``; return its exit code, seconds, and whether it timed out."""
        started = time.monotonic()
        self._oom_told = None
        resident = self._resident(user)
        if resident is not None:
            return self._run_resident(resident, command, timeout, cwd, sink, started)
        try:
            exec_id = self.api.exec_create(self.cid, timeout_argv(command, timeout), workdir=cwd, user=user)["Id"]
            stream = self.api.exec_start(exec_id, stream=True, demux=False)
        except docker.errors.APIError as e:
            raise gone_or_raise(e, f"exec in container {self.cid[:12]}") from e
        abandoned = self._pump(exec_id, stream, sink, started + timeout + KILL_GRACE_S + BACKSTOP_S)
        exit_code = -1 if abandoned else self._exit_code(exec_id)
        if exit_code < 0 or exit_code >= 128:  # killed: perhaps with its container
            self._check_alive(settle_s=0.5)
        duration = time.monotonic() - started
        return exit_code, duration, abandoned or is_timeout(exit_code, duration, timeout)

    def _run_resident(
        self, resident: Resident, command: str, timeout: float, cwd: str, sink: OutputCap | ByteSink, started: float
    ) -> tuple[int, float, bool]:
        limit, keep = (sink.limit, "head") if isinstance(sink, ByteSink) else (self.config.output_limit, "ends")
        deadline = started + timeout + KILL_GRACE_S + BACKSTOP_S
        try:
            exit_code, oom = resident.run(timeout_argv(command, timeout), cwd, sink, limit, keep, deadline)
        except Unavailable as e:  # it went away mid-command: the container with it, or the command killed it
            self._check_alive(settle_s=0.5)
            sink.feed(f"\n[agentbon: the sandbox's command executor went away during this command ({e})]".encode())
            exit_code, oom = 137, -1
        abandoned = exit_code == -1
        if abandoned or exit_code >= 128:
            self._check_alive(settle_s=0.5)
        if oom >= 0:  # the executor read the OOM-kill count itself: no exec to ask for it
            self._oom_told = oom > self.oom_kills
            self.oom_kills = max(oom, self.oom_kills)
        duration = time.monotonic() - started
        return exit_code, duration, abandoned or is_timeout(exit_code, duration, timeout)

    def _pump(self, exec_id: str, stream: Any, cap: OutputCap | ByteSink, deadline: float) -> bool:
        """Feed the stream into ``cap`` until it ends; True when the backstop deadline passed first.

        The stream normally ends with the command. It does not when a process that escaped the command's
        process group still holds the pipe, so while it lasts the engine is asked whether the exec is still
        running, at growing intervals (1 s, then up to ``POLL_MAX_S``): long commands cost few round-trips.
        """
        chunks: queue.SimpleQueue[bytes | BaseException | None] = queue.SimpleQueue()

        def read() -> None:
            try:
                for chunk in stream:
                    chunks.put(chunk)
            except BaseException as e:  # noqa: BLE001 - the socket closed under us; the main loop decides
                chunks.put(e)
            chunks.put(None)

        reader = threading.Thread(target=read, name=f"exec-{exec_id[:8]}", daemon=True)
        reader.start()
        checked, interval = time.monotonic(), 1.0
        ended: float | None = None
        try:
            while True:
                now = time.monotonic()
                if now > deadline:
                    return True
                try:
                    item = chunks.get(timeout=0.25)
                except queue.Empty:
                    item = b""
                if item is None:
                    return False
                if isinstance(item, bytes):
                    cap.feed(item)
                if ended is None and now - checked >= interval:
                    checked, interval = now, min(interval * 2, POLL_MAX_S)
                    if not self._running(exec_id):
                        ended = now
                if ended is not None and now - ended > LINGER_S:
                    return False
        finally:
            stream.close()
            reader.join(timeout=2)
            while not chunks.empty():
                item = chunks.get()
                if isinstance(item, bytes):
                    cap.feed(item)

    def _running(self, exec_id: str) -> bool:
        try:
            return bool(self.api.exec_inspect(exec_id)["Running"])
        except docker.errors.APIError:
            return False  # the container went: _exit_code raises SandboxGone

    def _exit_code(self, exec_id: str) -> int:
        deadline, pause = time.monotonic() + 5.0, 0.01
        while time.monotonic() < deadline:  # the stream can end a moment before the engine records the exit
            try:
                info = self.api.exec_inspect(exec_id)
            except docker.errors.APIError as e:
                raise gone_or_raise(e, f"exec in container {self.cid[:12]}") from e
            if not info["Running"] and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            time.sleep(pause)
            pause = min(pause * 2, 0.1)
        self._check_alive()
        return -1

    def _check_alive(self, settle_s: float = 0.0) -> None:
        """Raise ``SandboxGone`` when the container is gone or stopped.

        ``settle_s``: a forced removal kills the container's processes a moment before the engine marks
        the container as no longer running, so after a killed command look again for that long.
        """
        deadline = time.monotonic() + settle_s
        while True:
            try:
                state = self.api.inspect_container(self.cid)["State"]
            except docker.errors.APIError as e:
                raise gone_or_raise(e, f"container {self.cid[:12]}") from e
            if not state.get("Running") or state.get("Dead") or state.get("Status") in ("removing", "exited", "dead"):
                raise gone_or_raise(docker.errors.APIError("container is not running"), f"container {self.cid[:12]}")
            if time.monotonic() >= deadline:
                return
            time.sleep(0.1)

    def _new_oom_kill(self) -> bool:
        """True when the container's memory cgroup counted an OOM kill since we last looked."""
        self._check_alive()
        try:
            exec_id = self.api.exec_create(self.cid, ["sh", "-c", f"cat {OOM_FILES} 2>/dev/null"], user="0:0")["Id"]
            text = self.api.exec_start(exec_id).decode(errors="replace")
        except docker.errors.APIError:
            return False
        match = re.search(r"^oom_kill (\d+)", text, re.MULTILINE)
        count = int(match.group(1)) if match else 0
        new, self.oom_kills = count > self.oom_kills, count
        return new
