"""SEARCH/REPLACE edit blocks: parse them from a reply and apply them to a file's text.

The format (shown to the model by ``prompts/edit_instance.j2``)::

    path/to/file.py
    <<<<<<< SEARCH
    lines copied exactly from the file
    =======
    the lines that replace them
    >>>>>>> REPLACE

An empty SEARCH creates a new file. A block is applied where its SEARCH text occurs exactly; failing that,
where its lines match ignoring whitespace (trailing first, then indentation too), with the replacement
re-indented by the difference. Pure functions on strings: the agent reads and writes the files.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_OPEN = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$")
_MID = re.compile(r"^\s*={5,9}\s*$")
_CLOSE = re.compile(r"^\s*>{5,9}\s*REPLACE\s*$")
_FENCE = re.compile(r"^\s*```")


@dataclass
class EditBlock:
    path: str
    search: str
    replace: str


class BlockSyntaxError(ValueError):
    """A block that starts but is not well formed (no path, no ``=======`` or ``>>>>>>> REPLACE``)."""


def clean_path(line: str, workdir: str = "") -> str:
    """The file path on a block's path line, without markdown decoration or the repository prefix."""
    path = line.strip().strip("`*#:").strip()
    for prefix in ("File:", "file:", "Path:", "path:", "FILE:"):
        if path.startswith(prefix):
            path = path[len(prefix) :].strip()
    path = path.strip("`*'\"").strip()
    if workdir and path.startswith(workdir.rstrip("/") + "/"):
        path = path[len(workdir.rstrip("/")) + 1 :]
    while path.startswith("./"):
        path = path[2:]
    return path


def parse_blocks(reply: str, workdir: str = "") -> list[EditBlock]:
    """Every edit block in a reply, in order; raises ``BlockSyntaxError`` for one that is not well formed."""
    lines = reply.splitlines()
    blocks: list[EditBlock] = []
    i = 0
    while i < len(lines):
        if not _OPEN.match(lines[i]):
            i += 1
            continue
        # The path: the nearest line above that is not blank or a fence; right after another block, its path.
        above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip() and not _FENCE.match(lines[j])), "")
        path = (blocks[-1].path if blocks else "") if _CLOSE.match(above) else clean_path(above, workdir)
        if not path or _MID.match(above) or _OPEN.match(above):
            raise BlockSyntaxError(f"edit block {len(blocks) + 1}: no file path on the line above <<<<<<< SEARCH")
        mid = next((j for j in range(i + 1, len(lines)) if _MID.match(lines[j])), None)
        end = next((j for j in range(mid + 1, len(lines)) if _CLOSE.match(lines[j])), None) if mid else None
        if mid is None or end is None:
            missing = "=======" if mid is None else ">>>>>>> REPLACE"
            raise BlockSyntaxError(f"edit block {len(blocks) + 1} ({path}): no {missing} line")
        search, replace = lines[i + 1 : mid], lines[mid + 1 : end]
        blocks.append(
            EditBlock(
                path, "\n".join(search) + ("\n" if search else ""), "\n".join(replace) + ("\n" if replace else "")
            )
        )
        i = end + 1
    return blocks


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _reindent(lines: list[str], want: list[str], found: list[str]) -> list[str]:
    """Move replacement ``lines`` from the SEARCH block's indentation to the file's.

    Each indentation width seen in the matched lines maps to what the file has there; other widths
    follow the pattern of the matched ones: a constant shift (the block was written at another depth)
    or a constant factor (2-space indentation against the file's 4).
    """
    seen = {len(_indent(w)): _indent(f) for w, f in zip(want, found, strict=True) if w.strip()}
    shifts = {len(f) - n for n, f in seen.items()}
    factors = {len(f) / n for n, f in seen.items() if n}
    fill = next((f[0] for f in seen.values() if f), " ")

    def indent(n: int) -> str:
        if n in seen:
            return seen[n]
        if len(shifts) == 1:
            return fill * max(0, n + next(iter(shifts)))
        if len(factors) == 1 and not seen.get(0):
            return fill * round(n * next(iter(factors)))
        return fill * n

    return [line if not line.strip() else indent(len(_indent(line))) + line.lstrip() for line in lines]


def _loose_match(text: str, search: str, replace: str) -> str | None:
    """``text`` with the block applied where its lines match ignoring whitespace; None when nowhere."""
    lines = text.split("\n")
    want = search.rstrip("\n").split("\n")
    while want and not want[0].strip():
        want.pop(0)
    while want and not want[-1].strip():
        want.pop()
    if not want:
        return None
    for key in (str.rstrip, str.strip):
        target = [key(w) for w in want]
        for start in range(len(lines) - len(want) + 1):
            if [key(x) for x in lines[start : start + len(want)]] == target:
                new = replace.rstrip("\n").split("\n") if replace.strip() else []
                new = _reindent(new, want, lines[start : start + len(want)])
                return "\n".join(lines[:start] + new + lines[start + len(want) :])
    return None


def apply_block(text: str, block: EditBlock) -> tuple[str, str]:
    """Apply one block to ``text``: (new text, ``exact`` or ``whitespace``); raises ``ValueError`` with a hint."""
    if block.search and block.search in text:
        return text.replace(block.search, block.replace, 1), "exact"
    # A trailing newline the model left off the last SEARCH line is not a mismatch.
    if block.search.endswith("\n") and block.search[:-1] and text.endswith(block.search[:-1]):
        return text[: len(text) - len(block.search) + 1] + block.replace.rstrip("\n"), "exact"
    loose = _loose_match(text, block.search, block.replace)
    if loose is not None:
        return loose, "whitespace"
    raise ValueError(f"SEARCH text not found in {block.path}{closest_hint(text, block.search)}")


def closest_hint(text: str, search: str, context: int = 3) -> str:
    """Lines of the file near the best match for the SEARCH block's first line, to help a retry."""
    first = next((line for line in search.split("\n") if line.strip()), "")
    lines = text.split("\n")
    if not first or len(lines) > 20_000:
        return ""
    stripped = [line.strip() for line in lines]
    close = difflib.get_close_matches(first.strip(), stripped, n=1, cutoff=0.6)
    if not close:
        return ""
    at = stripped.index(close[0])
    span = max(context, len(search.split("\n")) + 1)
    snippet = "\n".join(lines[max(0, at - 1) : at + span])
    return f"; the closest lines in the file are:\n{snippet}"
