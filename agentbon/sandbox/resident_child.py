"""The resident executor: started once inside a sandbox, it runs the host's commands one after another.

Runs under the image's ``python3 -I -S``, so it is written for old interpreters too (Python 3.5: no f-strings, type
comments instead of annotations, the standard library only). The host side and the protocol are in
``agentbon/sandbox/resident.py``; why it exists is in docs/sandboxes.md ("One executor per sandbox").

stdin: one JSON request per line: ``{"argv": [...], "cwd": "/repo", "limit": N, "keep": "ends" | "head"}``.
stdout: frames of one kind byte, a 4-byte big-endian length and the payload:
``R`` ready (answer to the first request, ``{"hello": ...}``), ``O`` output bytes, ``D`` how many bytes were left out
between the forwarded head and tail (decimal), ``X`` the end of a command (``{"exit": code, "oom": kills}``).
"""

import json
import os
import re
import select
import struct
import subprocess
import sys
import time

LINGER_S = 0.5
"""How long output is still read after the command ended (a process that escaped it may hold the pipe)."""
OOM_FILES = ("/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control")

_out = sys.stdout.buffer


def send(kind, payload):
    # type: (bytes, bytes) -> None
    _out.write(kind + struct.pack(">I", len(payload)) + payload)
    _out.flush()


def oom_kills():
    # type: () -> int
    """The container's OOM-kill count (cgroup v2, else v1); -1 when neither file can be read."""
    for path in OOM_FILES:
        try:
            with open(path) as handle:
                match = re.search(r"^oom_kill (\d+)", handle.read(), re.MULTILINE)
        except OSError:
            continue
        return int(match.group(1)) if match else 0
    return -1


class Forward:
    """Sends the first ``limit`` bytes as they come; keeps the last ``limit`` (``keep=ends``) for the end."""

    def __init__(self, limit, keep):
        # type: (int, str) -> None
        self.limit, self.keep = limit, keep
        self.sent, self.tail, self.dropped = 0, bytearray(), 0

    def feed(self, chunk):
        # type: (bytes) -> None
        room = self.limit - self.sent if self.limit > 0 else len(chunk)
        if room > 0:
            send(b"O", chunk[:room])
            self.sent += min(room, len(chunk))
            chunk = chunk[room:]
        if not chunk:
            return
        if self.keep != "ends":
            self.dropped += len(chunk)
            return
        self.tail += chunk
        excess = len(self.tail) - self.limit
        if excess > 0:
            self.dropped += excess
            del self.tail[:excess]

    def finish(self):
        # type: () -> None
        if self.dropped:
            send(b"D", str(self.dropped).encode())
        if self.tail:
            send(b"O", bytes(self.tail))


def run(request):
    # type: (dict) -> None
    cwd = request.get("cwd") or "/"
    forward = Forward(int(request.get("limit") or 0), request.get("keep", "ends"))
    try:
        proc = subprocess.Popen(
            request["argv"], cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True,
        )
    except OSError as e:
        send(b"O", ("agentbon: cannot run the command in " + cwd + ": " + str(e.strerror or e) + "\n").encode())
        send(b"X", json.dumps({"exit": 126, "oom": -1}).encode())
        return
    stdout = proc.stdout
    assert stdout is not None  # stdout=PIPE
    fd, ended = stdout.fileno(), None
    while True:
        ready = select.select([fd], [], [], 0.2)[0]
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            forward.feed(chunk)
        if ended is None and proc.poll() is not None:
            ended = time.monotonic()
        if ended is not None and time.monotonic() - ended > LINGER_S:
            break
    stdout.close()
    code = proc.wait()
    forward.finish()
    code = 128 - code if code < 0 else code
    send(b"X", json.dumps({"exit": code, "oom": oom_kills() if code == 137 else -1}).encode())


def undumpable():
    # type: () -> bool
    """Make this process non-dumpable: a command running as the same user can then neither trace it nor open its
    ``/proc/<pid>/fd`` pipes to write forged frames (docs/security.md, "The resident executor")."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE, 0
    except (ImportError, OSError, AttributeError):
        return False


def main():
    # type: () -> None
    guarded = undumpable()
    for line in sys.stdin.buffer:
        request = json.loads(line.decode("utf-8"))
        if "hello" in request:
            send(b"R", json.dumps({"pid": os.getpid(), "hello": request["hello"], "guarded": guarded}).encode())
        else:
            run(request)


if __name__ == "__main__":
    main()
