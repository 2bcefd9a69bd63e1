"""A local OpenAI-compatible server run as a child process: started, health-checked, stopped on exit.

Cleanup is a context manager plus an ``atexit`` hook (never ``__del__``); the child runs in its own
process group so that stopping it also stops whatever it spawned (vLLM's engine core).
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from agentbon.errors import ServerFailure

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port on ``host`` that nothing listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])



def _die_with_parent():  # type: ignore[no-untyped-def]
    """A ``preexec_fn`` that has Linux end the server when agentbon dies without running ``atexit``.

    A SIGTERM or SIGKILL of the driver skips ``atexit``; the server would then hold its cores and memory
    for good. Set only from the main thread: the death signal follows the forking *thread*.
    """
    if not sys.platform.startswith("linux"):
        return None

    def arm() -> None:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    return arm

class LocalServer:
    """Runs ``command`` (which must listen on ``host``:``port``) and waits until ``GET /v1/models`` answers.

    ``with LocalServer(...) as endpoint:`` yields the base URL (``http://HOST:PORT/v1``). ``api_key``: the key the
    command was told to require (sent while waiting for it to answer).
    """

    def __init__(
        self,
        command: Sequence[str],
        *,
        port: int,
        name: str = "server",
        env: dict[str, str] | None = None,
        ready_timeout_s: float = 120.0,
        log_path: Path | None = None,
        host: str = LOOPBACK,
        api_key: str | None = None,
    ):
        self.command = list(command)
        self.port = port
        self.host, self.api_key = host, api_key
        self.name = name
        self.env = env
        self.ready_timeout_s = ready_timeout_s
        self.log_path = log_path
        self.endpoint = f"http://{host}:{port}/v1"
        self.proc: subprocess.Popen[bytes] | None = None
        self._launched: float | None = None
        self._ready = False
        self.started_s: float | None = None
        """Seconds from launch until the server answered."""

    def start(self) -> str:
        """Launch the process (unless ``launch`` did) and block until it serves; raise ``ServerFailure`` with the
        log tail if it cannot."""
        if self.proc is not None and self._ready:
            return self.endpoint
        self.launch()
        assert self._launched is not None
        try:
            self._wait_ready(self._launched)
        except BaseException:
            self.stop()
            raise
        self._ready = True
        self.started_s = time.monotonic() - self._launched
        return self.endpoint

    def launch(self) -> None:
        """Start the process and return at once (``start`` then waits until it serves): what the caller does
        meanwhile overlaps the server's load. Idempotent while the process is up."""
        if self.proc is not None:
            return
        if self.log_path is None:
            fd, name = tempfile.mkstemp(prefix=f"agentbon-{self.name}-", suffix=".log")
            os.close(fd)
            self.log_path = Path(name)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._launched, self._ready = time.monotonic(), False
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                self.command,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **(self.env or {})},
                start_new_session=True,
                preexec_fn=_die_with_parent() if threading.current_thread() is threading.main_thread() else None,
            )
        atexit.register(self.stop)

    def _wait_ready(self, launched: float) -> None:
        assert self.proc is not None
        deadline = launched + self.ready_timeout_s
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        with httpx.Client(timeout=2.0, trust_env=False, headers=headers) as http:
            while True:
                code = self.proc.poll()
                if code is not None:
                    raise ServerFailure(f"{self.name} exited with status {code} while starting:\n{self.log_tail()}")
                try:
                    if http.get(f"{self.endpoint}/models").status_code == 200:
                        return
                except httpx.TransportError:
                    pass  # not listening yet
                if time.monotonic() > deadline:
                    raise ServerFailure(
                        f"{self.name} did not answer on {self.endpoint} within {self.ready_timeout_s:g}s:\n"
                        f"{self.log_tail()}"
                    )
                time.sleep(0.2)

    def alive(self) -> bool:
        """Whether the process is still running."""
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the server's log (for error messages)."""
        try:
            text = self.log_path.read_text(errors="replace") if self.log_path else ""
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:]) or "(empty log)"

    def stop(self, grace_s: float = 10.0) -> None:
        """Stop the process group: SIGTERM, then SIGKILL after ``grace_s``; safe to call twice."""
        atexit.unregister(self.stop)
        proc, self.proc, self._ready = self.proc, None, False
        if proc is None:
            return
        if proc.poll() is not None:  # the leader is gone; children it spawned may not be
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            return
        for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                proc.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
