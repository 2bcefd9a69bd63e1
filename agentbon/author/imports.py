"""What a repository's files import, read with ``ast`` (task authoring: lean test lists, the detected environment).

Nothing is imported or run: a file's imports are its ``import`` and ``from ... import`` statements (relative ones
resolved from the file's own package), and for a doctest text file (``README.rst``) those of its ``>>>`` lines.
A file's module name comes from the ``__init__.py`` files above it, so ``src/pkg/sub.py`` is ``pkg.sub``
(docs/authoring.md, "Lean PASS_TO_PASS lists").
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath

from agentbon.diffs import is_test_path


def module_name(path: str, tree: set[str]) -> str:
    """The dotted module of the Python file ``path``: its folders up to the first one without ``__init__.py``."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    start = len(parts) - 1
    while start > 0 and "/".join([*parts[:start], "__init__.py"]) in tree:
        start -= 1
    return ".".join(parts[start:])


def _doctest_source(text: str) -> str:
    """The statements of a doctest text file's ``>>>`` lines, one per line."""
    return "\n".join(line.strip()[4:] for line in text.splitlines() if line.strip().startswith(">>> "))


def _tree(text: str, python: bool) -> ast.Module | None:
    try:
        return ast.parse(text if python else _doctest_source(text))
    except (SyntaxError, ValueError):
        if python:
            return None
        statements = []  # doctest lines one by one: a continued statement does not parse alone
        for line in _doctest_source(text).splitlines():
            try:
                statements += ast.parse(line).body
            except (SyntaxError, ValueError):
                continue
        return ast.Module(body=statements, type_ignores=[])


def imported(text: str, path: str, tree: set[str]) -> set[str]:
    """The absolute module names the file ``path`` (text ``text``) imports: ``import a.b`` gives ``a.b``, ``from a
    import b`` gives ``a`` and ``a.b`` (``b`` may be a submodule). Also the modules a conftest's ``pytest_plugins``
    names. A file that does not parse imports nothing."""
    python = path.endswith(".py")
    parsed = _tree(text, python)
    if parsed is None:
        return set()
    own = module_name(path, tree).split(".") if python else []
    package = own if path.endswith("__init__.py") else own[:-1]  # what a relative import starts from
    found: set[str] = set()
    for node in ast.walk(parsed):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                kept = package[: len(package) - node.level + 1] if node.level <= len(package) else []
                base = ".".join([*kept, *([node.module] if node.module else [])])
            else:
                base = node.module or ""
            if base:
                found.add(base)
            found.update(f"{base}.{alias.name}" if base else alias.name for alias in node.names if alias.name != "*")
        elif isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in node.targets
        ):
            found.update(
                c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, str)
            )
    return found


def fixture_names(text: str) -> set[str]:
    """The argument names of a test file's functions: the fixtures it asks for (some plugins are used only so)."""
    parsed = _tree(text, True)
    functions = (n for n in ast.walk(parsed) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)) if parsed else ()
    return {a.arg for f in functions for a in f.args.args}


def imports_any(names: Iterable[str], modules: Iterable[str]) -> bool:
    """Whether an imported name is one of ``modules`` or inside one (``a.b.c`` is in ``a.b``)."""
    wanted = tuple(modules)
    return any(name == m or name.startswith(m + ".") for name in names for m in wanted)


def lean_files(
    files: Iterable[str], changed: Iterable[str], touched: Iterable[str], tree: set[str], read: Callable[[str], str]
) -> tuple[set[str], list[str]]:
    """Of the ``files`` that hold tests, those a fix's PASS_TO_PASS keeps, and the changed modules: the files the
    test patch ``touched``, the changed files themselves (their doctests), and the files that import a module the
    fix ``changed`` (docs/authoring.md, "Lean PASS_TO_PASS lists"); every file where it changes no Python module."""
    modules = sorted({module_name(p, tree) for p in changed if p.endswith(".py")})
    if not modules:  # the fix changes no Python module: nothing tells which tests it concerns
        return set(files), modules
    keep = {f for f in files if f in set(touched) | set(changed)}
    for path in set(files) - keep:
        try:
            text = read(path)
        except (OSError, ValueError, UnicodeDecodeError):
            keep.add(path)  # unreadable: kept, rather than dropping tests it cannot judge
            continue
        if imports_any(imported(text, path, tree), modules):
            keep.add(path)
    return keep, modules


SKIP_DIRS = frozenset({".git", ".tox", ".nox", ".venv", "venv", "node_modules", "build", "dist", "__pycache__"})
PYTEST_OWN = frozenset({"pytest", "_pytest", "py", "__future__"})


def used_by_tests(root: Path) -> tuple[set[str], set[str], set[str]] | None:
    """What the test files and conftests under ``root`` use, lower case: the top-level names they import, the
    fixtures they ask for, and of the imports those neither the standard library, pytest nor the repository's own
    files and folders provide (any of them may be on ``sys.path``). None when the repository has no test file."""
    tree = {
        p.relative_to(root).as_posix()
        for p in root.rglob("*.py")
        if not SKIP_DIRS.intersection(p.relative_to(root).parts[:-1])
    }
    tests = sorted(p for p in tree if is_test_path(p))
    if not tests:
        return None
    names: set[str] = set()
    fixtures: set[str] = set()
    for path in tests:
        text = (root / path).read_text(encoding="utf-8", errors="replace")
        names |= {n.split(".")[0] for n in imported(text, path, tree)}
        fixtures |= fixture_names(text)
    own = {part for p in tree for part in PurePosixPath(p).with_suffix("").parts}  # namespace folders too
    third_party = {n for n in names if n not in sys.stdlib_module_names and n not in PYTEST_OWN and n not in own}
    return {n.lower() for n in names}, {f.lower() for f in fixtures}, {n.lower() for n in third_party}
