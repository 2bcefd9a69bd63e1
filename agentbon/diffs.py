"""Reading unified diffs: which files a patch touches (hunk-aware, git quoting understood), and which are tests.

The one reader of ``diff --git`` headers and ``---``/``+++`` paths: the verifier's guard and scan, the evidence rule
(verify/testpatch.py) and the patch taken from a sandbox (sandbox/patch.py) read paths here.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")
_QUOTED = re.compile(r'"(?:[^"\\]|\\.)*"')
_SIDES = re.compile(r"a/(.+?) b/(.+)")
GIT_HEADER = "diff --git "
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote_git_path(text: str) -> str:
    r"""A path as git prints it, unquoted: ``"a/caf\303\251"`` becomes ``a/café``; unquoted text is returned as is."""
    if len(text) < 2 or not (text.startswith('"') and text.endswith('"')):
        return text
    out = bytearray()
    body, i = text[1:-1], 0
    while i < len(body):
        ch = body[i]
        if ch != "\\" or i + 1 == len(body):
            out += ch.encode()
            i += 1
        elif body[i + 1] in "01234567":
            out.append(int(body[i + 1 : i + 4], 8) & 0xFF)
            i += 4
        else:
            out.append(_ESCAPES.get(body[i + 1], ord(body[i + 1])))
            i += 2
    return out.decode("utf-8", "surrogateescape")


def side_path(text: str) -> str | None:
    """The path of a ``---``/``+++`` line's argument, without the ``a/``/``b/`` prefix; None for /dev/null."""
    quoted = _QUOTED.match(text)
    path = unquote_git_path(quoted.group(0)) if quoted else text.split("\t", 1)[0]
    if path == "/dev/null":
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


def header_paths(rest: str) -> tuple[str, str] | None:
    """The old and new path of a ``diff --git`` line (``rest``: what follows ``diff --git ``), without ``a/``/``b/``;
    None where it names none. A renamed unquoted name with spaces splits at the first `` b/``: the ``rename from``
    and ``rename to`` lines that follow such a header are exact."""
    rest = rest.rstrip("\r\n")
    if '"' in rest:
        parts = [side_path(part) for part in re.findall(_QUOTED.pattern + r"|\S+", rest)[:2]]
        return (parts[0], parts[1]) if len(parts) == 2 and parts[0] and parts[1] else None
    # Unquoted names may contain spaces: "a/X b/X" splits in the middle when both sides are equal.
    half = (len(rest) - 1) // 2
    old, new = rest[:half], rest[half + 1 :]
    if old.startswith("a/") and new.startswith("b/") and old[2:] == new[2:]:
        return old[2:], new[2:]
    if old and old == new:  # diff --no-prefix
        return old, new
    sides = _SIDES.fullmatch(rest)
    return (sides.group(1), sides.group(2)) if sides else None


def files_touched(patch: str) -> list[str]:
    """Every path a unified diff creates, changes, deletes or renames (old and new names), in order of appearance.

    Hunk bodies are skipped by their line counts, so a removed line that starts with ``--`` is not
    mistaken for a file header.
    """
    seen: dict[str, None] = {}
    old_left = new_left = 0
    block_files: list[str] = []
    header: list[str] = []

    def close_block() -> None:
        if not block_files:
            for path in header:
                seen.setdefault(path)

    for line in patch.splitlines():
        if old_left > 0 or new_left > 0:
            tag = line[:1]
            if tag == "\\":
                continue
            if tag in (" ", ""):
                old_left, new_left = old_left - 1, new_left - 1
                continue
            if tag == "-":
                old_left -= 1
                continue
            if tag == "+":
                new_left -= 1
                continue
            old_left = new_left = 0  # a truncated hunk: read the line as a header
        hunk = _HUNK.match(line)
        if hunk:
            old_left = int(hunk.group(1)) if hunk.group(1) is not None else 1
            new_left = int(hunk.group(2)) if hunk.group(2) is not None else 1
        elif line.startswith(GIT_HEADER):
            close_block()
            block_files, header = [], list(dict.fromkeys(header_paths(line[len(GIT_HEADER) :]) or ()))
        elif line.startswith(("--- ", "+++ ")):
            path = side_path(line[4:])
            if path:
                block_files.append(path)
                seen.setdefault(path)
        elif line.startswith(("rename from ", "rename to ", "copy from ", "copy to ")):
            path = unquote_git_path(line.split(" ", 2)[2])
            block_files.append(path)
            seen.setdefault(path)
    close_block()
    return list(seen)


TEST_DIRS = frozenset({"test", "tests", "testing", "e2e"})
"""Directory names whose contents are tests (SWE-bench's split of test patches uses the same names)."""


def test_file_kind(path: str) -> str | None:
    """Which rule makes ``path`` a file of a Python test suite: ``conftest``, ``test file`` (``test_*.py``,
    ``*_test.py``) or ``under a test directory`` (``TEST_DIRS``); None for any other file.

    The rule of the guard (it undoes a candidate's changes to these files and names the rule as the reason) and of a
    task authored from a commit (its files split into the test patch and the gold patch by it, so that the guard
    undoes no file of a gold patch). The localiser's guess is broader (``agent.localise.is_test_path``).
    """
    p = PurePosixPath(path)
    if p.name == "conftest.py":
        return "conftest"
    if p.name.startswith("test_") and p.name.endswith(".py") or p.name.endswith("_test.py"):
        return "test file"
    if any(part in TEST_DIRS for part in p.parts[:-1]):
        return "under a test directory"
    return None


def is_test_path(path: str) -> bool:
    """Whether ``path`` is a file of a Python test suite (:func:`test_file_kind`)."""
    return test_file_kind(path) is not None
