"""Whole-definition edits: the format small models fall back to, a code block with the new function or class.

When a reply has no well-formed SEARCH/REPLACE block, its code blocks (```python fences, ``<file path=...>``
echoes of the prompt, the body of a block missing its ``=======``) are read as Python; each top-level
``def``/``class`` in them replaces the definition of that name in the file (methods inside a ``class X:``
wrapper replace those methods only when the wrapper leaves some of the class's methods out). The file's
indentation is kept, imports the file lacks are added after its last import, and the result must parse.
A code block cut off at the length limit keeps its complete definitions.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

_FENCE = re.compile(r"^\s*```+\s*([\w.+#\-/]*)\s*$")
_FILE_OPEN = re.compile(r"""^\s*<file\s+path=["']([^"']+)["'][^>]*>\s*$""")
_FILE_CLOSE = re.compile(r"^\s*</file>\s*$")
_MARKERS = re.compile(r"^\s*(<{5,9}\s*SEARCH|={5,9}|>{5,9}\s*(REPLACE)?)\s*$")
_MID = re.compile(r"^\s*={5,9}\s*$")
_OPEN = re.compile(r"^\s*<{5,9}\s*SEARCH\s*$")
_CLOSE = re.compile(r"^\s*>{5,9}\s*(REPLACE)?\s*$")
_FENCE_CLOSE = re.compile(r"^\s*```+\s*$")
_COMMENT_PATH = re.compile(r"^\s*(#+|//)\s*(?:file:?\s*)?(\S+\.\w{1,8})\s*$", re.IGNORECASE)
_TOP_DEF = re.compile(r"^(@|def |async def |class )")

Def = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass
class Snippet:
    code: str
    hint: str
    """The line naming the file: a path comment in the code, the fence's or ``<file>``'s path, the line above."""
    cut: bool
    """The block never closed (the reply ended inside it)."""


def _new_code(lines: list[str]) -> list[str]:
    """A code block's new code: after the last ``=======`` when it holds one, else without edit markers."""
    mids = [i for i, line in enumerate(lines) if _MID.match(line)]
    if mids:
        lines = lines[mids[-1] + 1 :]
    else:
        opens = [i for i, line in enumerate(lines) if _OPEN.match(line)]
        lines = lines[opens[-1] + 1 :] if opens else lines
    return [line for line in lines if not _MARKERS.match(line) and not _FENCE.match(line)]


def snippets(reply: str) -> list[Snippet]:
    """The code blocks of a reply, in order, each with the line that names its file (or "")."""
    lines = reply.splitlines()
    out: list[Snippet] = []
    i = 0
    while i < len(lines):
        fence, tag, block = _FENCE.match(lines[i]), _FILE_OPEN.match(lines[i]), _OPEN.match(lines[i])
        if not fence and not tag and not block:
            i += 1
            continue
        if block:  # an edit block outside any fence: it ends at its REPLACE line or the next block
            stop = [j for j in range(i + 1, len(lines)) if _CLOSE.match(lines[j]) or _OPEN.match(lines[j])]
            end = stop[0] if stop else len(lines)
            body = lines[i:end]
        else:
            close = _FILE_CLOSE if tag else _FENCE_CLOSE
            end = next((j for j in range(i + 1, len(lines)) if close.match(lines[j])), len(lines))
            body = lines[i + 1 : end]
        above = next((lines[j] for j in range(i - 1, max(-1, i - 3), -1) if lines[j].strip()), "")
        hint = tag.group(1) if tag else (fence.group(1) if fence and "." in fence.group(1) else "")
        first = next((line for line in body if line.strip()), "")
        comment = _COMMENT_PATH.match(first)
        if comment:
            hint = comment.group(2)
            body = body[body.index(first) + 1 :]
        elif not hint and body and not _OPEN.match(above):
            hint = above if not _FENCE.match(above) else ""
        out.append(Snippet("\n".join(_new_code(body)) + "\n", hint, end == len(lines)))
        i = end if block else end + 1
    return out


def parse_code(code: str) -> tuple[str, ast.Module, list[str]]:
    """Dedented code, its syntax tree and the definitions dropped from its end to make it parse.

    Raises ``SyntaxError`` when not even the first definition parses.
    """
    code = textwrap.dedent(code)
    dropped: list[str] = []
    while True:
        try:
            return code, ast.parse(code), dropped
        except SyntaxError:
            lines = code.split("\n")
            starts = [i for i, line in enumerate(lines) if _TOP_DEF.match(line)]
            # Only a definition that is not the first can go: drop the last one (with its decorators).
            while len(starts) > 1 and lines[starts[-1] - 1].startswith("@"):
                starts.pop()
            if len(starts) < 2:
                raise
            cut = starts[-1]
            dropped.append(lines[cut].strip().split("(")[0].split(":")[0])
            code = "\n".join(lines[:cut]).rstrip() + "\n"


def names(tree: ast.Module) -> list[str]:
    """Top-level definitions of a module, in order."""
    return [n.name for n in tree.body if isinstance(n, _DEFS)]


def _end(node: ast.stmt) -> int:
    """The last line of a node (the parser always sets it; typed as optional)."""
    return node.end_lineno or node.lineno


def _start(node: Def) -> int:
    """First line of a definition, its decorators included (1-based)."""
    return min([d.lineno for d in node.decorator_list] + [node.lineno])


def _source(lines: list[str], node: Def, indent: str) -> list[str]:
    """A definition's lines from ``lines``, moved from its own indentation to ``indent``."""
    own = node.col_offset
    out = []
    for line in lines[_start(node) - 1 : node.end_lineno]:
        body = line[own:] if line[:own].strip() == "" else line.lstrip()
        out.append(indent + body if body.strip() else "")
    return out


def _indent_of(lines: list[str], node: Def) -> str:
    line = lines[_start(node) - 1]
    return line[: len(line) - len(line.lstrip())]


def _methods(node: ast.ClassDef) -> dict[str, Def]:
    return {n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def replace_definitions(text: str, code: str, append_new: bool = False) -> tuple[str, list[str]]:
    """``text`` with every definition of ``code`` put in place of the one of that name; (new text, names).

    Raises ``ValueError`` (with the reason) when the file does not parse, nothing in ``code`` matches a
    definition of the file, the code is the same as the file's, or the result would not parse.
    """
    try:
        file_tree = ast.parse(text)
    except SyntaxError as e:
        raise ValueError(f"the file does not parse (line {e.lineno}), so definitions cannot be located") from None
    code, tree, dropped = parse_code(code)
    new_lines, old = code.split("\n"), text.split("\n")
    top = {n.name: n for n in file_tree.body if isinstance(n, _DEFS)}
    methods = [(c, m) for c in file_tree.body if isinstance(c, ast.ClassDef) for m in _methods(c).values()]
    ops: list[tuple[int, int, list[str]]] = []  # (first line index, end index exclusive, new lines)
    changed: list[str] = []
    unknown: list[str] = []
    imports: list[str] = []
    have = {line.strip() for line in old}

    def put(target: Def, node: Def, label: str) -> None:
        repl = _source(new_lines, node, _indent_of(old, target))
        if repl != old[_start(target) - 1 : target.end_lineno]:
            ops.append((_start(target) - 1, _end(target), repl))
            changed.append(label)

    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            seg = "\n".join(new_lines[node.lineno - 1 : node.end_lineno])
            if seg.strip() not in have and node.col_offset == 0:
                imports.append(seg)
            continue
        if not isinstance(node, _DEFS):
            continue
        target = top.get(node.name)
        if isinstance(node, ast.ClassDef) and isinstance(target, ast.ClassDef):
            given, present = _methods(node), _methods(target)
            if given and set(present) - set(given):  # a wrapper around some methods: replace just those
                for name, method in given.items():
                    if name in present:
                        put(present[name], method, f"{node.name}.{name}")
                    else:  # a new method goes at the end of the class
                        indent = _indent_of(old, next(iter(present.values())))
                        ops.append((_end(target), _end(target), [""] + _source(new_lines, method, indent)))
                        changed.append(f"{node.name}.{name}")
                continue
        if target is not None and isinstance(node, ast.ClassDef) == isinstance(target, ast.ClassDef):
            put(target, node, node.name)
            continue
        owners = [m for c, m in methods if m.name == node.name]
        if target is None and len(owners) == 1 and not isinstance(node, ast.ClassDef):
            put(owners[0], node, node.name)
        elif target is None and append_new:
            ops.append((len(old), len(old), ["", ""] + _source(new_lines, node, "")))
            changed.append(node.name)
        else:
            unknown.append(node.name)
    if not changed:
        if unknown:
            raise ValueError(f"no definition of {', '.join(unknown)} in the file")
        raise ValueError("the code is the same as the file's: nothing to change")
    if imports:
        at = max((_end(n) for n in file_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))), default=0)
        ops.append((at, at, imports))
        changed.append("imports")
    ops.sort(key=lambda op: (op[0], op[1]), reverse=True)
    for (_, end, _), (next_start, _, _) in zip(ops[1:], ops[:-1], strict=True):
        if end > next_start:
            raise ValueError("the definitions overlap")
    for start, end, repl in ops:
        old[start:end] = repl
    result = "\n".join(old)
    try:
        ast.parse(result)
    except SyntaxError as e:
        raise ValueError(f"the new code would not parse: line {e.lineno}: {e.msg}") from None
    if dropped:
        changed.append(f"(incomplete {', '.join(dropped)} left out)")
    return result, changed
