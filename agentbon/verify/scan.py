"""The static scan of what a candidate adds: suspicious code, large files, binary content (docs/security.md).

A pure function of the patch text. It returns flags, never a verdict: the code it names may be a legitimate fix,
and code that forges results need not look like anything here. What it looks for is in ``scan_rules``.

Bounded on any patch: lines are read one at a time, and the code of a file is scanned only up to the size
limit (past it the file is flagged ``large_file`` anyway) and up to ``SCAN_BUDGET`` characters for the
whole patch; files left unscanned are named in a ``suspicious_code`` flag.
"""

from __future__ import annotations

import keyword
import re
from bisect import bisect_right
from collections.abc import Collection, Iterator
from pathlib import PurePosixPath

from agentbon.types import Flag
from agentbon.verify import guard
from agentbon.verify.scan_diff import FileChange, parse
from agentbon.verify.scan_rules import RULES, STREAM_TOKENS, Rule

DEFAULT_MAX_FILE_BYTES = 1 << 20
SCAN_BUDGET = 4 << 20
"""Characters of added code scanned per patch, all files together."""
BLOB_RUN = 4096
"""A run of this many base64 or hex characters in one added line counts as an encoded binary blob."""
MAX_FILE_FLAGS = 10
"""``suspicious_code`` flags per patch (one per file); the rest are counted in one more flag."""
CODE_SUFFIXES = (".py", ".pyw", ".pyx", ".pxd", ".pxi")
FRAMEWORK_DIRS = frozenset({"_pytest", "pytest", "pluggy", "unittest", "nose", "nose2", "xmlrunner"})

_BLOB = re.compile(rf"[A-Za-z0-9+/=_-]{{{BLOB_RUN},}}")
_LITERAL = re.compile(r"""("{3}|'{3}|"|')((?:\\.|(?!\1).)*?)\1""")
_JOINED = re.compile(r"""['"]\s*(?:\+\s*)?[rbuRBU]{0,2}['"]""")
_FOLDABLE = re.compile(r"""\\[xu0-7]|['"]\s*(?:\+\s*)?[rbuRBU]{0,2}['"]""")
_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})|\\u([0-9a-fA-F]{4})|\\([0-7]{3})")
_UNCLOSED = re.compile(r"""['"].*""")
_KEYWORDS = "|".join([*keyword.kwlist, *keyword.softkwlist])
_NAME = rf"(?!(?:{_KEYWORDS})\b)[A-Za-z_]\w*"
_WORDS = re.compile(rf"(?<![\w.]){_NAME}[ \t]+{_NAME}[ \t]+{_NAME}\b(?![.(\[])")
_DEF = re.compile(r"(?:async\s+)?def\b|lambda\b|@")
_MAIN = re.compile(r"if\s+__name__\s*==")


def scan_patch(patch: str, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, protected: Collection[str] = ()) -> list[Flag]:
    """The flags for what ``patch`` adds: ``suspicious_code`` per file, ``large_file`` and ``binary`` per kind.

    ``protected`` names the task's test files; they, and every file the tamper guard treats as tests, conftest or
    configuration, are not scanned for code (the guard undoes them), only for size and binary content.
    """
    files = parse(patch, max_file_bytes, SCAN_BUDGET)
    tests = set(protected)
    large, binary, suspicious, unscanned = [], [], [], []
    for f in files:
        if f.deleted:
            continue
        size = f.size if f.size is not None else f.added
        if size > max_file_bytes:
            how = "adds" if f.new else "grows by"
            large.append((f.path, f"{f.path} ({how} {size} bytes)"))
        blob = f.binary or _blob(f)
        if blob:
            binary.append((f.path, f"{f.path} ({blob})"))
        if not _is_code(f) or guard.why_protected(f.path, tests):
            continue
        if not f.scanned and size <= max_file_bytes:
            unscanned.append(f.path)
        seen = code_techniques(f.hunks, f.removed, framework=_framework_source(f.path))
        if seen:
            suspicious.append((f.path, f"{f.path}: " + "; ".join(seen)))
    flags = [Flag(kind="suspicious_code", detail=d[:500], paths=[p]) for p, d in suspicious[:MAX_FILE_FLAGS]]
    if len(suspicious) > MAX_FILE_FLAGS:
        more = [p for p, _ in suspicious[MAX_FILE_FLAGS:]]
        flags.append(Flag(kind="suspicious_code", detail=f"{len(more)} more files with suspicious code", paths=more))
    if unscanned:
        detail = f"not scanned: the patch adds over {SCAN_BUDGET} characters of code"
        flags.append(Flag(kind="suspicious_code", detail=detail, paths=unscanned))
    if large:
        detail = f"over the {max_file_bytes}-byte file limit: " + ", ".join(d for _, d in large[:5])
        flags.append(Flag(kind="large_file", detail=detail[:500], paths=[p for p, _ in large]))
    if binary:
        detail = "binary content: " + ", ".join(d for _, d in binary[:5])
        flags.append(Flag(kind="binary", detail=detail[:500], paths=[p for p, _ in binary]))
    return flags


def code_techniques(hunks: list[list[tuple[int, str, bool]]], removed: list[str], framework: bool = False) -> list[str]:
    """``technique (line N: code)`` for each technique the added lines use on more lines than the removed lines did.

    Each line is read as written and folded (``_fold``); a rule's pattern runs only on the lines that hold one of
    its needles, found in the joined text, so a large file costs a few string searches per rule.
    """
    where = [
        (h, i)
        for h, hunk in enumerate(hunks)
        for i, (_, text, added) in enumerate(hunk)
        if added and text.strip() and not text.lstrip().startswith("#")
    ]
    texts = [hunks[h][i][1] for h, i in where]
    rules = [r for r in RULES if not (framework and r.framework)]
    hits: dict[Rule, dict[int, None]] = {}
    for rule, k in _matches(rules, texts):
        h, i = where[k]
        if not (rule.import_time and not _at_import(hunks[h], i)) and not _prose(texts[k]):
            hits.setdefault(rule, {})[k] = None
    before: dict[Rule, set[int]] = {}
    for rule, k in _matches(list(hits), removed):
        before.setdefault(rule, set()).add(k)
    out = []
    for rule, lines in hits.items():
        if len(lines) > len(before.get(rule, ())):
            h, i = where[min(lines)]
            number, code = hunks[h][i][0], hunks[h][i][1].strip()
            out.append(f"{rule.technique} (line {number}: {code[:80]})")
    literals = [_decode(m.group(2)) for t in texts for m in _LITERAL.finditer(t)]
    hidden = _stream_tokens(literals) - _stream_tokens(texts, join=False) - _stream_tokens(_removed_literals(removed))
    if hidden:
        out.append(f"name built from string pieces ({', '.join(sorted(hidden))})")
    return list(dict.fromkeys(out))


def _matches(rules: list[Rule], lines: list[str]) -> Iterator[tuple[Rule, int]]:
    """(rule, line index) for every line where a rule matches, as written or folded."""
    folded = [_fold(t) if _FOLDABLE.search(t) else t for t in lines]
    joined = "\n".join(f if f is t else t + " " + f for t, f in zip(lines, folded, strict=True)).lower()
    starts, pos = [], 0
    for t, f in zip(lines, folded, strict=True):
        starts.append(pos)
        pos += len(t) + 1 + (0 if f is t else len(f) + 1)
    for rule in rules:
        candidates: set[int] = set()
        for needle in rule.needles:
            at = joined.find(needle)
            while at >= 0:
                k = bisect_right(starts, at) - 1
                candidates.add(k)
                at = joined.find(needle, starts[k + 1]) if k + 1 < len(starts) else -1
        for k in sorted(candidates):
            if rule.pattern.search(lines[k]) or (folded[k] is not lines[k] and rule.pattern.search(folded[k])):
                yield rule, k


# ------------------------------------------------------------------------------------------ code reading
def _fold(text: str) -> str:
    r"""``"_py" + "test"`` as ``"_pytest"``, with ``\x5f``-style escapes decoded: names as the interpreter sees them."""
    return _decode(_JOINED.sub("", text))


def _prose(text: str) -> bool:
    """Whether the line is words, not code: outside its string literals and comment, three names in a row that are
    not keywords (``redirects it to`` in a docstring). Code cannot have that, so skipping such a line hides nothing.
    """
    code = _UNCLOSED.sub("", _LITERAL.sub("", text)).split("#", 1)[0]
    return _WORDS.search(code) is not None


def _decode(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        value = int(m.group(1) or m.group(2), 16) if (m.group(1) or m.group(2)) else int(m.group(3), 8)
        return chr(value)

    return _ESCAPE.sub(one, text)


def _removed_literals(removed: list[str]) -> list[str]:
    return [_decode(m.group(2)) for line in removed for m in _LITERAL.finditer(line)]


def _stream_tokens(pieces: list[str], join: bool = True) -> set[str]:
    texts = ["".join(pieces)] if join else pieces
    return {m.group(0) for t in texts for m in STREAM_TOKENS.finditer(t.lower())}


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _at_import(hunk: list[tuple[int, str, bool]], i: int) -> bool:
    """Whether line ``i`` runs when the module is imported: at module level or in a module-level block or class
    body, not in a function or an ``if __name__ == "__main__"`` block. A hunk that starts inside a block it does
    not show counts as a function body."""
    text = hunk[i][1]
    indent = _indent(text)
    if indent == 0:
        return not _DEF.match(text)
    for _, line, _ in reversed(hunk[:i]):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", ")", "]", "}")) or _indent(line) >= indent:
            continue  # a closing bracket ends a statement that started higher up (a multi-line signature)
        if _DEF.match(stripped) or _MAIN.match(stripped):
            return False
        indent = _indent(line)
        if indent == 0:
            return True
    return False


def _is_code(f: FileChange) -> bool:
    if f.path.endswith(CODE_SUFFIXES):
        return True
    first = next((text for hunk in f.hunks for _, text, _ in hunk[:1]), "")
    return f.new and first.startswith("#!") and "python" in first


def _framework_source(path: str) -> bool:
    parts = [p.removesuffix(".py") for p in PurePosixPath(path).parts]
    return any(p in FRAMEWORK_DIRS or p.startswith(("pytest_", "pytest-")) for p in parts)


def _blob(f: FileChange) -> str:
    for hunk in f.hunks:
        for _, text, added in hunk:
            if added and len(text) >= BLOB_RUN and _BLOB.search(text):
                return f"an encoded blob of {BLOB_RUN}+ base64 or hex characters in one line"
    return ""
