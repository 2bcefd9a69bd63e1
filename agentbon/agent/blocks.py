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
from dataclasses import dataclass, field

_OPEN = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$")
_MID = re.compile(r"^\s*={5,9}\s*$")
_CLOSE = re.compile(r"^\s*>{5,9}\s*(REPLACE)?\s*$")
_FENCE = re.compile(r"^\s*```")


@dataclass
class EditBlock:
    path: str
    search: str
    replace: str
    line: str = field(default="", compare=False)
    """The raw line the path was read from (prose, markdown), for resolving it against the repository."""
    unsplit: bool = field(default=False, compare=False)
    """The block has no ``=======`` line: ``search`` holds its whole body, split where the file says (``split``)."""


class BlockSyntaxError(ValueError):
    """A block that starts but is not well formed (no path, no ``=======`` or ``>>>>>>> REPLACE``)."""


@dataclass
class ParsedReply:
    blocks: list[EditBlock]
    """The well-formed blocks, in order; a block with no path line has path ""."""
    problems: list[str]
    """One line per block that is not well formed."""
    cut: bool = False
    """The last block runs to the end of the reply (it was cut off)."""
    unsplit: list[EditBlock] = field(default_factory=list)
    """Blocks with ``>>>>>>> REPLACE`` but no ``=======`` line (``EditBlock.unsplit``), for ``split`` to read."""


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


def _trim_fences(part: list[str]) -> list[str]:
    """A SEARCH or REPLACE part without the markdown fences (and blank lines next to them) at its ends."""
    for _ in range(2):
        edge = 0
        while edge < len(part) and (not part[edge].strip() or _FENCE.match(part[edge])):
            edge += 1
        if any(_FENCE.match(line) for line in part[:edge]):
            part = part[edge:]
        part = part[::-1]
    return part


def _join(lines: list[str]) -> str:
    return "\n".join(lines) + ("\n" if lines else "")


def parse_reply(reply: str, workdir: str = "") -> ParsedReply:
    """The well-formed edit blocks of a reply and a problem line for each other one; never raises.

    A block runs to the next ``<<<<<<< SEARCH`` at most, so one broken block does not swallow the next. A block
    without its ``<<<<<<< SEARCH`` line is read where a code fence opens it (``_unopened``).
    """
    lines = reply.splitlines()
    opens = [i for i, line in enumerate(lines) if _OPEN.match(line)]
    parsed = ParsedReply([], [])
    found: list[tuple[int, EditBlock]] = []
    used: set[int] = set()
    last_path = ""
    for n, i in enumerate(opens, start=1):
        limit = opens[n] if n < len(opens) else len(lines)
        # The path: the nearest line above that is not blank or a fence; right after another block, its path.
        above = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip() and not _FENCE.match(lines[j])), "")
        if _CLOSE.match(above):
            path, line = last_path, ""
        elif _MID.match(above) or _OPEN.match(above):
            path, line = "", ""
        else:
            path, line = clean_path(above, workdir), above
        last_path = path or last_path
        mid = next((j for j in range(i + 1, limit) if _MID.match(lines[j])), None)
        end = next((j for j in range(mid + 1, limit) if _CLOSE.match(lines[j])), None) if mid else None
        fenced = sum(1 for x in lines[:i] if _FENCE.match(x)) % 2 == 1
        if mid is not None and end is None and fenced:  # no REPLACE line, but the code fence it is in closes
            end = next((j for j in range(mid + 1, limit) if _FENCE.match(lines[j])), None)
        close = next((j for j in range(i + 1, limit) if _CLOSE.match(lines[j])), None)
        if mid is None and close is not None:  # no separator: the body is read against the file (``split``)
            body = _trim_fences(lines[i + 1 : close])
            parsed.unsplit.append(EditBlock(path, _join(body), "", line, unsplit=True))
            used.update(range(i, close + 1))
            continue
        if mid is None or end is None:
            missing = "=======" if mid is None else ">>>>>>> REPLACE"
            cut = limit == len(lines) and not any(_CLOSE.match(x) for x in lines[i + 1 :])
            parsed.cut = parsed.cut or cut
            ending = " (the reply ended inside it)" if cut else ""
            parsed.problems.append(f"edit block {n} ({path or 'no path'}): no {missing} line{ending}")
            used.update(range(i, limit))
            continue
        search, replace = _trim_fences(lines[i + 1 : mid]), _trim_fences(lines[mid + 1 : end])
        found.append((i, EditBlock(path, _join(search), _join(replace), line)))
        used.update(range(i, end + 1))
    found += _unopened(lines, used, workdir)
    parsed.blocks = [block for _, block in sorted(found, key=lambda item: item[0])]
    return parsed


_SOURCE_EXT = "py|pyi|js|jsx|ts|tsx|go|rs|java|c|h|cc|cpp|hpp|rb|php|md|rst|txt|toml|cfg|ini|yaml|yml|json|html|css|sh"
_PATH_LINE = re.compile(rf"^[\s`*#]*(?:[\w.\-]+/)*[\w.\-]+\.({_SOURCE_EXT})[\s`*:]*$")
"""A line that is a file's path alone (decorated at most), to tell a path from the first line of code."""


def _unopened(lines: list[str], used: set[int], workdir: str) -> list[tuple[int, EditBlock]]:
    """Blocks whose ``<<<<<<< SEARCH`` line is missing, read only inside a code fence: the SEARCH part runs from the
    fence that opens it (less a first line that is a file path) to the ``=======``, the REPLACE part on to
    ``>>>>>>> REPLACE``. The path: that first line, else the line above the fence. (start line, block) each."""
    out = []
    for close in (c for c, x in enumerate(lines) if _CLOSE.match(x) and c not in used):
        mid = next((j for j in range(close - 1, -1, -1) if j in used or _MID.match(lines[j]) or _CLOSE.match(lines[j])),
                   None)  # fmt: skip
        if mid is None or mid in used or not _MID.match(lines[mid]):
            continue
        fence = next((j for j in range(mid - 1, -1, -1) if j in used or _FENCE.match(lines[j]) or _CLOSE.match(
            lines[j]) or _MID.match(lines[j])), None)  # fmt: skip
        if fence is None or fence in used or not _FENCE.match(lines[fence]):
            continue
        if sum(1 for x in lines[:fence] if _FENCE.match(x)) % 2:  # that fence closes one: the block is not inside
            continue
        first = fence + 1
        if first < mid and _PATH_LINE.match(lines[first]):
            path_line, first = lines[first], first + 1
        else:
            path_line = next((lines[j] for j in range(fence - 1, -1, -1) if lines[j].strip()), "")
        search, replace = lines[first:mid], lines[mid + 1 : close]
        if not any(x.strip() for x in search):
            continue
        out.append((fence, EditBlock(clean_path(path_line, workdir), _join(search), _join(replace), path_line)))
        used.update(range(fence, close + 1))
    return out


def parse_blocks(reply: str, workdir: str = "") -> list[EditBlock]:
    """Every edit block in a reply, in order; raises ``BlockSyntaxError`` for one that is not well formed."""
    parsed = parse_reply(reply, workdir)
    if parsed.problems:
        raise BlockSyntaxError(parsed.problems[0])
    if parsed.unsplit:
        raise BlockSyntaxError(f"edit block for {parsed.unsplit[0].path or 'no path'}: no ======= line")
    for n, block in enumerate(parsed.blocks, start=1):
        if not block.path:
            raise BlockSyntaxError(f"edit block {n}: no file path on the line above <<<<<<< SEARCH")
    return parsed.blocks


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


def split(text: str, block: EditBlock) -> tuple[EditBlock | None, str]:
    """A block without its ``=======`` line (``block.search`` is its body) split where it is unambiguous.

    The body is read as the SEARCH lines followed by the REPLACE lines restating them: the split goes where the
    body's first line comes again, and the lines before it must be in ``text``. Exactly one such place splits the
    block; (the split block, ""), else (None, why not).
    """
    lines = block.search.split("\n")[:-1] if block.search.endswith("\n") else block.search.split("\n")
    first = next((n for n, x in enumerate(lines) if x.strip()), None)
    if first is None:
        return None, "no ======= line, and the block is empty"
    again = [k for k in range(first + 1, len(lines)) if lines[k].strip() == lines[first].strip()]
    fits = []
    for k in again:
        candidate = EditBlock(block.path, _join(lines[:k]), _join(lines[k:]), block.line)
        try:
            apply_block(text, candidate)
        except ValueError:
            continue
        fits.append(candidate)
    if len(fits) == 1:
        return fits[0], ""
    if fits:
        return None, f"no ======= line, and the block could be split at {len(fits)} places; add the ======= line"
    return None, (
        "no ======= line, and no split of the block into lines of the file and their replacement was found; "
        "add the ======= line between the SEARCH lines and the new ones"
    )


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
