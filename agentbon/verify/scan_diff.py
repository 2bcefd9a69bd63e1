"""Reading a patch for the static scan (``scan``): per file, what it adds, its size, binary content, hunk lines.

A git diff is read file by file: a file whose added lines are over the limit, or that is deleted, is read no
further than its header, and a binary file no further than its stated size, so a huge patch costs little; hunk
lines are kept only within the scan's budget.
"""

from __future__ import annotations

import base64
import io
import re
import zlib
from dataclasses import dataclass, field

from agentbon.diffs import GIT_HEADER, header_paths, side_path, unquote_git_path

_NOT_ADDED = re.compile(r"\n[^+\n][^\n]*")
_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


@dataclass
class FileChange:
    """One file of a patch, as the scan needs it."""

    path: str
    new: bool = False
    deleted: bool = False
    binary: str = ""
    """Why the content is binary (``GIT binary patch``, ``NUL byte``...), or empty."""
    size: int | None = None
    """The new content's size where a binary patch states it."""
    added: int = 0
    """Characters the patch adds to the file."""
    scanned: bool = True
    hunks: list[list[tuple[int, str, bool]]] = field(default_factory=list)
    """New-side lines of each hunk: (line number, text, added)."""
    removed: list[str] = field(default_factory=list)
    delta: list[str] = field(default_factory=list)
    """The first lines of a binary delta (enough for its header's sizes)."""


def parse(patch: str, max_file_bytes: int, budget: int) -> list[FileChange]:
    """The files of a unified diff; at most ``budget`` characters of hunk lines kept, all files together."""
    files: list[FileChange] = []
    left = [budget]
    starts, at = [0], patch.find("\n" + GIT_HEADER)
    while at >= 0:
        starts.append(at + 1)
        at = patch.find("\n" + GIT_HEADER, at + 1)
    for a, b in zip(starts, [*starts[1:], len(patch)], strict=True):
        section = patch[a:b]  # the patch itself, not a copy, when it holds one file
        git = section.startswith(GIT_HEADER)
        added = _added_chars(section) if git and len(section) > max_file_bytes else 0
        if added <= max_file_bytes:
            _parse_section(section, files, max_file_bytes, left, header_only=False)
            continue
        hunk_at = section.find("\n@@ ")
        before = len(files)
        _parse_section(section[: hunk_at + 1 if hunk_at >= 0 else 65536], files, max_file_bytes, left, True)
        if len(files) > before:
            f = files[-1]
            f.added, f.scanned = added, False
            if "\0" in section and not f.binary:
                f.binary = "NUL byte in an added line"
    return [f for f in files if f.path]


def _added_chars(section: str) -> int:
    """Characters of the added lines, newlines included, without reading the section line by line."""
    start = max(section.find("\n@@ "), 0)
    other = sum(len(m.group()) for m in _NOT_ADDED.finditer(section, start))
    end = len(section) - section.endswith("\n")  # each line is counted with the newline before it
    return end - start - other - section.count("\n+", start)


def _parse_section(
    section: str, files: list[FileChange], max_file_bytes: int, budget: list[int], header_only: bool
) -> None:
    git = section.startswith(GIT_HEADER)
    cur: FileChange | None = None
    hunk: list[tuple[int, str, bool]] = []
    old_left = new_left = number = 0
    in_binary = 0  # 1: expecting "literal N"/"delta N", 2: reading the first block of a delta

    for line in io.StringIO(section):
        if old_left > 0 or new_left > 0:
            tag, text = line[:1], line[1:].rstrip("\r\n")
            if tag == "\\":
                continue
            if tag in ("+", " ", "\n", "") and cur is not None:
                added = tag == "+"
                if added:
                    cur.added += len(line) - 1
                    if "\0" in text and not cur.binary:
                        cur.binary = "NUL byte in an added line"
                new_left -= 1
                old_left -= 0 if added else 1
                if cur.scanned and budget[0] > 0 and cur.added <= max_file_bytes:
                    hunk.append((number, text, added))
                    budget[0] -= len(text)
                else:
                    cur.scanned = False
                number += 1
                continue
            if tag == "-" and cur is not None:
                old_left -= 1
                if cur.scanned and budget[0] > 0:
                    cur.removed.append(text)
                    budget[0] -= len(text)
                continue
            old_left = new_left = 0  # a truncated hunk: read the line as a header
        if in_binary and cur is not None:
            if in_binary == 1:
                kind, _, size = line.strip().partition(" ")
                if kind == "literal" and size.isdigit():
                    cur.size = int(size)
                    return  # the rest of the section is the encoded content
                in_binary = 2
            elif line.strip() and len(cur.delta) < 8:
                cur.delta.append(line.strip())
            else:
                cur.size = _delta_target_size(cur.delta)
                return
            continue
        match = _HUNK.match(line)
        if match and cur is not None:
            if git and (header_only or cur.deleted):
                return
            old_left = int(match.group(1)) if match.group(1) is not None else 1
            new_left = int(match.group(3)) if match.group(3) is not None else 1
            number = int(match.group(2))
            hunk = []
            cur.hunks.append(hunk)
        elif line.startswith(GIT_HEADER):
            cur = FileChange((header_paths(line[len(GIT_HEADER) :]) or ("", ""))[1])
            files.append(cur)
        elif line.startswith("--- "):
            if cur is None or cur.hunks:
                cur = FileChange("")
                files.append(cur)
            cur.new = cur.new or line[4:].startswith("/dev/null")
        elif line.startswith("+++ ") and cur is not None:
            path = side_path(line[4:].rstrip("\n"))
            if path:
                cur.path = path
            else:
                cur.deleted = True
        elif cur is not None:
            if line.startswith("new file mode"):
                cur.new = True
            elif line.startswith("deleted file mode"):
                cur.deleted = True
            elif line.startswith(("rename to ", "copy to ")):
                cur.path = unquote_git_path(line.rstrip("\n").split(" ", 2)[2])
            elif line.startswith("GIT binary patch"):
                if cur.deleted:
                    return
                cur.binary, in_binary = "GIT binary patch", 1
            elif line.startswith("Binary files ") and line.rstrip().endswith(" differ"):
                cur.binary = "binary files differ"


def _delta_target_size(lines: list[str]) -> int | None:
    """The result size a git binary delta states in its header (base85 lines, zlib, two size varints)."""
    data = b""
    try:
        for line in lines:
            n = ord(line[0]) - (ord("A") - 1 if line[0] <= "Z" else ord("a") - 27)
            data += base64.b85decode(line[1:].encode())[:n]
        header = zlib.decompressobj().decompress(data, 32)
    except (ValueError, zlib.error, IndexError):
        return None
    sizes, value, shift = [], 0, 0
    for byte in header:
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            sizes.append(value)
            value, shift = 0, 0
            if len(sizes) == 2:
                return sizes[1]
    return None
