"""Which repository file a model meant: the path it wrote, resolved against the tracked files.

Small models decorate the path line (``**shelf/paging.py**``, "Here's the fix for `a/b.py`:"), copy the
placeholder of a format example (``path/to/envfile/parser.py``), prefix the repository root or a diff side
(``/repo/x.py``, ``a/x.py``) or give only the tail of the path (``paging.py``). ``resolve_path`` tries, for
each path-like token of the line: the token itself, the token less leading directories, the one tracked file
ending with it, the one tracked file with its name. Nothing is guessed when two files fit.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Collection
from pathlib import PurePosixPath

# A path-like token: something with a slash or a file extension, no spaces.
_TOKEN = re.compile(r"[\w.\-/\\]*[\w\-]\.[A-Za-z0-9]{1,8}\b|[\w.\-]+/[\w.\-/]+")
_PLACEHOLDERS = ("path/to/", "path/", "to/", "a/", "b/")


def _candidates(line: str, workdir: str = "") -> list[str]:
    """Path-like tokens of ``line``, most likely first (backticked or bold ones before bare words)."""
    text = line.strip()
    quoted = re.findall(r"[`*'\"]([^`*'\"\s]+)[`*'\"]", text)
    tokens = quoted + _TOKEN.findall(text)
    out: list[str] = []
    for token in tokens:
        token = token.strip("`*'\"()[]<>,;:").replace("\\", "/")
        if workdir and token.startswith(workdir.rstrip("/") + "/"):
            token = token[len(workdir.rstrip("/")) + 1 :]
        while token.startswith("./"):
            token = token[2:]
        token = token.lstrip("/")
        if token and token not in out:
            out.append(token)
    return out


def _match(token: str, files: Collection[str], by_name: dict[str, list[str]]) -> str | None:
    """The one tracked file ``token`` names, exactly, less leading directories, by unique suffix or name."""
    path = posixpath.normpath(token)
    if path in files:
        return path
    parts = path.split("/")
    for drop in range(1, len(parts)):  # path/to/x/y.py, /repo/x/y.py, a/x/y.py
        tail = "/".join(parts[drop:])
        if tail in files and ("/" in tail or "/".join(parts[:drop]) + "/" in _PLACEHOLDERS):
            return tail
    suffix = [f for f in files if f.endswith("/" + path)]
    if len(suffix) == 1:
        return suffix[0]
    named = by_name.get(PurePosixPath(path).name, [])
    if len(named) == 1 and not suffix:
        return named[0]
    return None


def resolve_path(line: str, files: Collection[str], workdir: str = "") -> str | None:
    """The tracked file that a path line (or a line of prose naming a file) refers to; None when unclear."""
    by_name: dict[str, list[str]] = {}
    for f in files:
        by_name.setdefault(PurePosixPath(f).name, []).append(f)
    for token in _candidates(line, workdir):
        found = _match(token, files, by_name)
        if found:
            return found
    return None


def new_file_path(path: str) -> str:
    """Where a file the model creates goes: its path less a copied placeholder prefix (``path/to/``)."""
    for prefix in ("path/to/", "path/"):
        if path.startswith(prefix) and len(path) > len(prefix):
            return path[len(prefix) :]
    return path


def suggestions(path: str, files: Collection[str], n: int = 5) -> list[str]:
    """Tracked files that look like ``path``: same name first, then close spellings."""
    name = PurePosixPath(path).name
    same = sorted(f for f in files if PurePosixPath(f).name == name)
    close = difflib.get_close_matches(path, list(files), n=n, cutoff=0.5)
    return list(dict.fromkeys(same + close))[:n]
