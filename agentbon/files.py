"""Files that a writer killed half-way cannot leave half-written for the next command (docs/architecture.md).

A file written whole (a config, a record, a report, an export, a cache) is written under a temporary name in its own
folder and renamed over the old one: a reader, or the next command, sees the old file or the new one, never part of
either. A JSONL file grows by whole lines: a torn last line (no newline yet) is skipped on reading and cut off
before the next append, so what follows it is never glued to it.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Replace ``path`` with ``data`` (text as UTF-8) through a temporary file beside it and a rename; return it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "xb") as f:  # the mode the umask gives, as a plain write would
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())  # the rename must not land before the bytes do
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return path


def read_jsonl(path: str | Path, starts: tuple[str, ...] = ("",)) -> Iterator[Any]:
    """Every complete line of a JSONL file, parsed, in order: a torn last line, and a line that is not JSON (a tail
    torn by a version that glued the next line to it), are skipped. Nothing where the file does not exist. Only the
    lines that begin with one of ``starts`` are parsed (a reader that wants a few kinds of a large log)."""
    try:
        f = open(path, encoding="utf-8")
    except FileNotFoundError:
        return
    with f:
        for line in f:
            if not line.endswith("\n"):
                return
            with contextlib.suppress(json.JSONDecodeError):
                if line.startswith(starts) and line.strip():
                    yield json.loads(line)


def append_jsonl(path: str | Path, lines: Iterable[str]) -> None:
    """Append whole lines (each a JSON text without its newline), first cutting off a torn last line; on disk before
    this returns."""
    path = Path(path)
    lines = [line + "\n" for line in lines]
    if not lines:
        return
    cut_torn_tail(path)
    with open(path, "a", encoding="utf-8") as f:
        f.writelines(lines)
        f.flush()
        os.fsync(f.fileno())


def cut_torn_tail(path: Path) -> None:
    """Truncate ``path`` after its last newline (nothing to do where it ends with one, is empty or absent)."""
    try:
        f = open(path, "rb+")
    except FileNotFoundError:
        return
    with f:
        end = f.seek(0, os.SEEK_END)
        if end == 0:
            return
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return
        # Read backwards in blocks: a run's event log can be large, and the tail is short.
        pos = end
        while pos > 0:
            step = min(1 << 16, pos)
            pos -= step
            f.seek(pos)
            found = f.read(step).rfind(b"\n")
            if found >= 0:
                f.truncate(pos + found + 1)
                return
        f.truncate(0)
