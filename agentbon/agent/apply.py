"""Applying a reply's edits in the sandbox: SEARCH/REPLACE blocks, else whole definitions from its code blocks.

Paths are resolved against the tracked files (``paths``); a block with no usable path goes to the one shown
file its SEARCH text fits. A block whose SEARCH text is nowhere in the file but whose REPLACE part is a
complete definition replaces that definition (the model rewrote the function from memory). Every changed
file is written once, at the end; one ``Outcome`` per block or code block.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from agentbon.agent.blocks import EditBlock, apply_block, split
from agentbon.agent.definitions import Snippet, parse_code, replace_definitions
from agentbon.agent.paths import new_file_path, resolve_path, suggestions
from agentbon.protocols import Sandbox

_DEF_LINE = re.compile(r"^\s*(@|def |async def |class )")


@dataclass
class Outcome:
    """What became of one edit block."""

    path: str
    applied: bool
    how: str
    """``exact``, ``whitespace``, ``created`` or ``definitions: <names>`` when applied; the reason when not."""
    cause: str = ""
    """Why not, as an ``UnusableCause`` (``unknown_file``, ``search_not_found``, ``malformed_block``,
    ``not_applied``); "" when applied."""


class _Files:
    """The texts of files read so far, as edited so far."""

    def __init__(self, sandbox: Sandbox, tracked: set[str]):
        self.sandbox, self.tracked = sandbox, tracked
        self.texts: dict[str, str] = {}

    def read(self, path: str) -> str:
        """The file's current text; raises ``ValueError`` with the reason when it cannot be read."""
        if path not in self.texts:
            try:
                self.texts[path] = self.sandbox.read_file(path).decode("utf-8")
            except UnicodeDecodeError:
                raise ValueError("not a UTF-8 text file") from None
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as e:
                raise ValueError(f"cannot read {path}: {type(e).__name__}") from None
        return self.texts[path]

    def write_changed(self, outcomes: list[Outcome]) -> None:
        for path in {o.path for o in outcomes if o.applied}:
            self.sandbox.write_file(path, self.texts[path])


def _outside(path: str) -> bool:
    path = posixpath.normpath(path)
    return path.startswith(("/", "../")) or path == ".."


def _missing(path: str, tracked: set[str]) -> str:
    several = sorted(f for f in tracked if f.endswith("/" + path.lstrip("./")))
    if len(several) > 1:
        return f"{path} could be any of {', '.join(several[:5])}: give the file's path from the repository's root"
    near = suggestions(path, tracked)
    return f"no such file in the repository: {path}" + (f" (did you mean {', '.join(near)}?)" if near else "")


def _as_definitions(text: str, block: EditBlock) -> tuple[str, str] | None:
    """The block applied as a whole-definition replacement, when both parts are complete definitions."""
    if not block.path.endswith(".py") or not _DEF_LINE.match(
        next((x for x in block.search.split("\n") if x.strip()), "")
    ):
        return None
    try:
        _, tree, _ = parse_code(block.replace)
        if not tree.body or not all(
            isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for n in tree.body
        ):
            return None
        new, names = replace_definitions(text, block.replace)
    except (SyntaxError, ValueError):
        return None
    return new, "definitions: " + ", ".join(names)


def _fits(files: _Files, paths: Sequence[str], block: EditBlock) -> list[str]:
    """The files among ``paths`` in which the block's SEARCH text is found."""
    found = []
    for path in paths:
        try:
            text = files.read(path)
            if block.unsplit:
                if split(text, block)[0] is not None:
                    found.append(path)
                continue
            apply_block(text, EditBlock(path, block.search, block.replace))
            found.append(path)
        except ValueError:
            continue
    return found


def apply_edits(
    sandbox: Sandbox, blocks: list[EditBlock], tracked: set[str], shown: Sequence[str] = (), workdir: str = ""
) -> list[Outcome]:
    """Apply blocks in order (several on one file chain); write each changed file once; one outcome per block."""
    files = _Files(sandbox, tracked)
    outcomes: list[Outcome] = []
    for block in blocks:
        if block.path and _outside(block.path):
            outcomes.append(Outcome(block.path, False, "the path is outside the repository", "unknown_file"))
            continue
        if not block.search.strip() and not block.unsplit:  # a new file: its path as written, less a placeholder
            path = new_file_path(posixpath.normpath(block.path)) if block.path else ""
            if not path or path in tracked or path in files.texts:
                reason = "SEARCH is empty but {} exists; copy the lines to change".format(path or "no file path")
                outcomes.append(Outcome(path, False, reason, "not_applied"))
                continue
            files.texts[path] = block.replace
            outcomes.append(Outcome(path, True, "created"))
            continue
        path = posixpath.normpath(block.path) if block.path else ""
        if path not in tracked:
            path = resolve_path(block.line, tracked, workdir) or resolve_path(block.path, tracked, workdir) or ""
        if not path and block.search.strip():
            fits = _fits(files, shown, block)
            if len(fits) != 1:
                reason = _missing(block.path, tracked) if block.path else "no file path above <<<<<<< SEARCH"
                if not block.path and fits:
                    reason += f" and the SEARCH text is in several files: {', '.join(fits)}"
                outcomes.append(Outcome(block.path, False, reason, "unknown_file"))
                continue
            path = fits[0]
        try:
            text = files.read(path)
        except ValueError as e:
            outcomes.append(Outcome(path, False, str(e), "unknown_file"))
            continue
        if block.unsplit:
            halves, why = split(text, EditBlock(path, block.search, "", block.line, unsplit=True))
            if halves is None:
                outcomes.append(Outcome(path, False, why, "malformed_block"))
                continue
            block = halves
        block = EditBlock(path, block.search, block.replace)
        try:
            files.texts[path], how = apply_block(text, block)
            outcomes.append(Outcome(path, True, how))
        except ValueError as e:
            whole = _as_definitions(text, block)
            if whole:
                files.texts[path] = whole[0]
                outcomes.append(Outcome(path, True, whole[1]))
            else:
                outcomes.append(Outcome(path, False, str(e), "search_not_found"))
    files.write_changed(outcomes)
    return outcomes


def _defines(text: str, names: list[str]) -> int:
    """How many of ``names`` a Python file defines (at top level or as methods)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return 0
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    return sum(name in defined for name in names)


def apply_snippets(
    sandbox: Sandbox, snippets: list[Snippet], tracked: set[str], shown: Sequence[str] = (), workdir: str = ""
) -> list[Outcome]:
    """Apply code blocks as whole-definition edits; a code block with no definition is not an edit and is skipped."""
    files = _Files(sandbox, tracked)
    outcomes: list[Outcome] = []
    for snippet in snippets:
        if not any(_DEF_LINE.match(line) for line in snippet.code.split("\n")):
            continue
        named = resolve_path(snippet.hint, tracked, workdir) if snippet.hint else None
        try:
            _, tree, _ = parse_code(snippet.code)
        except SyntaxError as e:
            cut = " (the code block was cut off)" if snippet.cut else ""
            outcomes.append(
                Outcome(
                    named or "", False, f"the code block does not parse: line {e.lineno}: {e.msg}{cut}", "not_applied"
                )
            )
            continue
        names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        if not names:
            continue
        target = named
        if target is None:
            counts = {}
            for path in (p for p in shown if p.endswith(".py")):
                try:
                    counts[path] = _defines(files.read(path), names)
                except ValueError:
                    continue
            best = max(counts.values(), default=0)
            top = [p for p, c in counts.items() if c == best]
            if best == 0 or len(top) != 1:
                where = "no shown file defines" if best == 0 else f"{', '.join(top)} all define"
                outcomes.append(
                    Outcome(
                        "",
                        False,
                        f"a code block with {', '.join(names)} but no file path, and {where} them",
                        "unknown_file",
                    )
                )
                continue
            target = top[0]
        if not target.endswith(".py"):
            outcomes.append(
                Outcome(target, False, "code blocks replace definitions in Python files only", "not_applied")
            )
            continue
        try:
            files.texts[target], changed = replace_definitions(files.read(target), snippet.code, append_new=bool(named))
            outcomes.append(Outcome(target, True, "definitions: " + ", ".join(changed)))
        except ValueError as e:
            outcomes.append(Outcome(target, False, str(e), "not_applied"))
    files.write_changed(outcomes)
    return outcomes
