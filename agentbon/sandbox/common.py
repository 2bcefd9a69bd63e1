"""What both sandbox backends share: labels, the ``timeout -k`` wrapper, output caps, the diff script, file locks."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

LABEL = "agentbon"
"""Every agentbon container carries ``agentbon=1``; the reaper finds leftovers by it."""
SESSION_ENV = "AGENTBON_SESSION"
"""When set, sandboxes are also labelled ``agentbon.session=<value>`` (the test suite checks for leftovers by it)."""
KILL_GRACE_S = 5
"""Seconds between ``timeout``'s TERM and its KILL."""
TIMEOUT_EXIT_CODES = (124, 137)

GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "agentbon",
    "GIT_AUTHOR_EMAIL": "agentbon@localhost",
    "GIT_COMMITTER_NAME": "agentbon",
    "GIT_COMMITTER_EMAIL": "agentbon@localhost",
}
"""Set in every sandbox so agents can commit even in a prebuilt image without a git identity."""


ALIASES = {"run": "run_id", "task": "task_id", "rollout": "rollout_id"}
"""Short label keys callers may use; stored under the canonical ``agentbon.<key>_id`` names."""


def _key(name: str) -> str:
    bare = name.removeprefix(f"{LABEL}.")
    return f"{LABEL}.{ALIASES.get(bare, bare)}"


def container_labels(labels: dict[str, str] | None, task_id: str | None = None) -> dict[str, str]:
    """Docker labels for a sandbox: ``agentbon=1`` plus ``agentbon.<key>`` for each given key (bare or prefixed)."""
    out = {LABEL: "1"}
    out.update({_key(k): str(v) for k, v in (labels or {}).items()})
    if task_id is not None:
        out.setdefault(f"{LABEL}.task_id", task_id)
    if os.environ.get(SESSION_ENV):
        out.setdefault(f"{LABEL}.session", os.environ[SESSION_ENV])
    return out


def label_filters(labels: dict[str, str] | None) -> list[str]:
    """``label`` filters matching agentbon sandboxes that carry all the given labels (bare or prefixed keys)."""
    return [f"{LABEL}=1", *(f"{_key(k)}={v}" for k, v in (labels or {}).items())]


def matches(found: dict[str, str], labels: dict[str, str] | None) -> bool:
    """True when ``found`` (a sandbox's labels) carries ``agentbon=1`` and all the given labels."""
    wanted = dict(f.split("=", 1) for f in label_filters(labels))
    return all(found.get(k) == v for k, v in wanted.items())


def slug(text: str, limit: int = 40) -> str:
    """A name fragment safe in docker names, tags and file names."""
    cleaned = re.sub(r"[^a-z0-9_.-]+", "-", text.lower()).strip(".-_")
    return cleaned[:limit].rstrip(".-_") or "x"


# The command runs under `timeout`, which leads its own process group; when the command ends, whatever it left
# running in that group (background jobs, a fork bomb) is killed too, so nothing outlives its command.
_WRAPPER = (
    'timeout -k {grace} "$1" bash -c "$2" & pid=$!; wait "$pid"; rc=$?; '
    'for _ in 1 2 3 4 5 6 7 8; do kill -KILL -- "-$pid" 2>/dev/null || break; done; exit "$rc"'
)


def timeout_argv(command: str, timeout: float) -> list[str]:
    """Argv that runs ``command`` in bash under ``timeout -k``, so a runaway command dies inside the sandbox."""
    return ["bash", "-c", _WRAPPER.format(grace=KILL_GRACE_S), "agentbon-exec", f"{max(timeout, 0.001):g}", command]


def is_timeout(exit_code: int, duration_s: float, timeout: float) -> bool:
    """``timeout`` exits 124 (TERM worked) or 137 (KILL needed); an OOM kill also gives 137, but early."""
    return exit_code in TIMEOUT_EXIT_CODES and duration_s >= timeout * 0.98


class OutputCap:
    """Keeps the head and tail of a stream of bytes, counting what falls in between."""

    def __init__(self, limit: int):
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - self.tail_limit
        if excess > 0:
            self.dropped += excess
            del self.tail[:excess]

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        """The kept output, with a marker where the middle was dropped."""
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        if not self.dropped:
            return head + tail
        return f"{head}\n[... {self.dropped} bytes of output omitted ...]\n{tail}"


def parse_bytes(size: str | int) -> int:
    """``"2g"`` → 2147483648 (docker's memory syntax: b, k, m, g suffixes)."""
    if isinstance(size, int):
        return size
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmg]?)b?\s*", size.lower())
    if not match:
        raise ValueError(f"not a size: {size!r} (expected e.g. 512m or 2g)")
    scale = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[match.group(2)]
    return int(float(match.group(1)) * scale)


@contextlib.contextmanager
def file_lock(name: str) -> Iterator[None]:
    """An exclusive lock across processes (Ray workers building the same image wait for one another)."""
    directory = Path(tempfile.gettempdir()) / "agentbon-locks"
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f"{slug(name, 100)}.lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


CHANNEL_INSIDE = "/agentbon/channel"
"""Where a Docker sandbox sees its channel folder (``sandbox.channel``)."""
AGENT_DIR_INSIDE = "/agentbon/agent"
"""Where a Docker sandbox sees ``sandbox.agent_dir`` (read-only)."""


CHANNEL_PREFIX = "agentbon-ch-"


def channel_folder(mounts: list[dict[str, str]] | None) -> Path | None:
    """The host folder of a Docker sandbox's channel among its mounts (as the engine lists them), or None: only a
    folder ``Channel.make`` names (directly in the temp directory, with its prefix), never another mount's source."""
    for mount in mounts or ():
        source = Path(mount.get("Source") or "/")
        if (
            mount.get("Destination") == CHANNEL_INSIDE
            and source.name.startswith(CHANNEL_PREFIX)
            and source.parent == Path(tempfile.gettempdir())
        ):
            return source
    return None


class Channel:
    """A sandbox's own host folder, shared with the sandbox (``sandbox.channel``): a rollout's model proxy listens on
    a Unix socket in it, the sandbox connects to that socket at ``inside`` (its only way out without a network)."""

    def __init__(self, host: str, inside: str):
        self.host, self.inside = host, inside

    @classmethod
    def make(cls, inside: str | None = None) -> Channel:
        """A fresh folder under the temp directory (short: a socket's path has at most 107 bytes); ``inside``: its
        path in the sandbox (None: the same as on the host)."""
        host = tempfile.mkdtemp(prefix=CHANNEL_PREFIX)
        os.chmod(host, 0o711)  # the sandbox's user, another uid, must reach the socket; nobody may list the folder
        return cls(host, inside or host)

    def remove(self) -> None:
        shutil.rmtree(self.host, ignore_errors=True)
