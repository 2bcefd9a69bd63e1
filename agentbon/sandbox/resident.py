"""The host side of a sandbox's resident executor: one engine ``exec`` per sandbox and user, then no engine call per
command (docs/sandboxes.md, "One executor per sandbox").

The executor (``resident_child.py``) is started with its stdin attached, over the engine's hijacked exec connection,
and answers a ``hello`` before it takes commands. Each command keeps the guarantees of a plain ``exec``: the same
``timeout -k`` wrapper inside the container that kills the command's process group, the same output caps, the same
backstop on the host. Where the executor cannot run (no ``python3`` in the image, an engine reached over ssh), or it
dies, the caller falls back to one ``exec`` per command.
"""

from __future__ import annotations

import functools
import json
import select
import socket
import struct
import time
from pathlib import Path
from typing import Any, Protocol

import docker


@functools.cache
def source() -> str:
    """The executor's program, passed to ``python3 -c`` (read once per process, on first use)."""
    return Path(__file__).with_name("resident_child.py").read_text()


LAUNCH = 'command -v python3 >/dev/null 2>&1 || exit 97; exec python3 -I -S -c "$1"'
"""``sh -c`` script that starts the executor with the image's ``python3``, isolated from the task's ``PYTHON*``
variables and site-packages (a task's ``PYTHONPATH`` or ``sitecustomize`` cannot reach it)."""
HEADER = struct.Struct(">BxxxI")
"""The engine's multiplexed stream header (stream id, payload length) on a connection without a TTY."""


class Unavailable(Exception):
    """The executor cannot be used (it did not start, or it went away): run commands with one ``exec`` each."""


class Sink(Protocol):
    """Where a command's output goes (``OutputCap``, ``ByteSink``): fed chunks, told what was left out."""

    dropped: int

    def feed(self, chunk: bytes) -> None: ...


class Resident:
    """One executor process in a container, run as ``user``; one command at a time."""

    def __init__(self, api: docker.APIClient, container_id: str, user: str, start_timeout: float):
        self.api, self.cid, self.user = api, container_id, user
        self._buffer = bytearray()
        self._stderr = bytearray()
        self._sock: socket.socket | None = None
        self._holder: Any = None
        self.pid = 0
        """The executor's pid in the container."""
        self._start(start_timeout)

    def _start(self, timeout: float) -> None:
        exec_id = self.api.exec_create(
            self.cid, ["sh", "-c", LAUNCH, "agentbon-resident", source()], stdin=True, user=self.user, workdir="/"
        )["Id"]
        holder = self.api.exec_start(exec_id, socket=True)
        sock = getattr(holder, "_sock", holder)
        if not isinstance(sock, socket.socket):
            self._close_holder(holder)
            raise Unavailable(f"the engine's connection ({type(holder).__name__}) cannot carry a resident executor")
        self._holder, self._sock = holder, sock
        nonce = time.monotonic_ns()
        self._send({"hello": nonce})
        kind, payload = self._frame(time.monotonic() + timeout)
        hello = json.loads(payload) if kind == b"R" else {}
        if hello.get("hello") != nonce:
            self.close()
            raise Unavailable(f"the resident executor answered {kind!r} to hello")
        if not hello.get("guarded"):  # its pipes would be open to the commands it runs: not a channel to trust
            self.close()
            raise Unavailable("the resident executor could not make itself non-dumpable (prctl)")
        self.pid = int(hello["pid"])

    # ------------------------------------------------------------------ wire

    def _send(self, request: dict[str, Any]) -> None:
        assert self._sock is not None
        try:
            self._sock.sendall(json.dumps(request).encode() + b"\n")
        except OSError as e:
            self.close()
            raise Unavailable(f"the resident executor's connection broke: {e}") from e

    def _fill(self, deadline: float) -> bool:
        """Read one engine frame into the buffer; False when the deadline passed first."""
        assert self._sock is not None
        header = self._recv(HEADER.size, deadline)
        if header is None:
            return False
        stream, size = HEADER.unpack(header)
        payload = self._recv(size, deadline) if size else b""
        if payload is None:
            return False
        if stream == 2:
            self._stderr += payload
            del self._stderr[:-4000]
        else:
            self._buffer += payload
        return True

    def _recv(self, size: int, deadline: float) -> bytes | None:
        assert self._sock is not None
        data = bytearray()
        while len(data) < size:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._sock], [], [], min(left, 1.0))
            if not ready:
                continue
            try:
                chunk = self._sock.recv(size - len(data))
            except OSError as e:
                self.close()
                raise Unavailable(f"the resident executor's connection broke: {e}") from e
            if not chunk:
                said = self._stderr.decode(errors="replace").strip()[-300:]
                self.close()
                raise Unavailable("the resident executor went away" + (f": {said}" if said else ""))
            data += chunk
        return bytes(data)

    def _frame(self, deadline: float) -> tuple[bytes, bytes]:
        """The executor's next frame; ``(b"", b"")`` when the deadline passed first."""
        while True:
            if len(self._buffer) >= 5:
                (size,) = struct.unpack(">I", self._buffer[1:5])
                if len(self._buffer) >= 5 + size:
                    kind, payload = bytes(self._buffer[:1]), bytes(self._buffer[5 : 5 + size])
                    del self._buffer[: 5 + size]
                    return kind, payload
            if not self._fill(deadline):
                return b"", b""

    # ------------------------------------------------------------------ commands

    def run(self, argv: list[str], cwd: str, sink: Sink, limit: int, keep: str, deadline: float) -> tuple[int, int]:
        """Run ``argv`` in ``cwd``, feeding its output to ``sink``; return ``(exit code, OOM kills)``.

        ``limit`` bytes of output are forwarded as they come, and (``keep="ends"``) the last ``limit`` at the end,
        with what fell between added to ``sink.dropped``. Exit ``-1`` when ``deadline`` passed first: the executor is
        then closed (a stuck command or executor is not waited for twice). ``Unavailable`` when it went away.
        """
        if self._sock is None:
            raise Unavailable("the resident executor was closed")
        self._send({"argv": argv, "cwd": cwd, "limit": limit, "keep": keep})
        while True:
            kind, payload = self._frame(deadline)
            if kind == b"O":
                sink.feed(payload)
            elif kind == b"D":
                sink.dropped += int(payload)
            elif kind == b"X":
                end = json.loads(payload)
                return int(end["exit"]), int(end.get("oom", -1))
            elif kind == b"":
                self.close()
                return -1, -1
            else:
                self.close()
                raise Unavailable(f"the resident executor sent an unknown frame {kind!r}")

    @property
    def alive(self) -> bool:
        return self._sock is not None

    def idle(self) -> bool:
        """True when the connection is open and quiet (no end-of-stream waiting): a warm sandbox still ready."""
        if self._sock is None:
            return False
        readable, _, _ = select.select([self._sock], [], [], 0)
        if readable:
            self.close()
            return False
        return True

    def close(self) -> None:
        """Close the connection; the executor reads end-of-input and exits (or goes with its container)."""
        sock, self._sock = self._sock, None
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._close_holder(self._holder)
        self._holder = None

    @staticmethod
    def _close_holder(holder: Any) -> None:
        try:
            if holder is not None:
                holder.close()
        except OSError:
            pass
