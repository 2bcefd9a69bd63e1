"""No import cycles inside agentbon, and a config layer that imports nothing that runs on it.

The graph is read from the source with ``ast``: an edge ``a -> b`` where module ``a`` imports ``b``. Imports under
``if TYPE_CHECKING:`` never run and are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1] / "agentbon"

CONFIG_LAYER = {"agentbon.config", "agentbon.inert", "agentbon.prompt_files"}
"""The config and what it asks while it validates: the settings that do nothing (inert.py), the prompt folder."""
CONFIG_MAY_IMPORT = CONFIG_LAYER | {"agentbon.errors", "agentbon.types"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.Module, nested: bool) -> list[ast.Import | ast.ImportFrom]:
    """The import statements that run: at module level (in its ``if``/``try`` blocks too), and with ``nested``
    those inside functions and classes as well."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif _is_type_checking(node):
            todo.extend(node.orelse)  # type: ignore[attr-defined]
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.ExceptHandler) or nested:
            todo.extend(ast.iter_child_nodes(node))
    return found


def _targets(node: ast.Import | ast.ImportFrom, package: str, modules: dict[str, Path]) -> set[str]:
    """The agentbon modules an import statement loads (``from p import m`` loads ``p.m`` where it is a module)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in modules}
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parts, base] if base else parts)
    subs = {f"{base}.{a.name}" for a in node.names}
    named = {m for m in subs if m in modules}
    return named | ({base} if len(named) < len(subs) and base in modules else set())


def import_graph(nested: bool, packages: bool) -> dict[str, set[str]]:
    """Module -> the agentbon modules it imports. With ``packages``, importing ``a.b.c`` also runs the packages
    ``a.b`` and ``a`` first (those the importer is not itself inside)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _imports(ast.parse(path.read_text()), nested):
            for target in _targets(node, package, modules):
                edges.add(target)
                parts = target.split(".")
                for i in range(2, len(parts)) if packages else ():
                    outer = ".".join(parts[:i])
                    if outer in modules and not (name == outer or name.startswith(outer + ".")):
                        edges.add(outer)
        graph[name] = edges - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next((w for w in edges if w not in index or w in on_stack), None)
            if nxt is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif nxt in index:
                low[node] = min(low[node], index[nxt])
            else:
                index[nxt] = low[nxt] = len(index)
                stack.append(nxt)
                on_stack.add(nxt)
                work.append((nxt, iter(sorted(graph.get(nxt, ())))))
    return found


def test_the_cycle_finder_finds_a_cycle_and_only_it() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"f"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"x": {"y"}, "y": set()}) == []


def test_no_import_cycle_at_module_level() -> None:
    """What runs on import: a cycle here is a module that sees another half-initialised."""
    assert cycles(import_graph(nested=False, packages=True)) == []


def test_the_config_layer_imports_nothing_that_runs_on_it() -> None:
    """The config, and everything it imports even inside a function, never imports the config back."""
    graph = import_graph(nested=True, packages=False)
    assert graph["agentbon.config"] <= CONFIG_MAY_IMPORT, graph["agentbon.config"] - CONFIG_MAY_IMPORT
    reached, todo = set(), sorted(graph["agentbon.config"])
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(graph[name])
    assert "agentbon.config" not in reached


def test_no_cycle_among_the_report_modules() -> None:
    """compute <-> scaling and frontier <-> summary were cycles through function-local imports."""
    graph = import_graph(nested=True, packages=False)
    report = {name: edges for name, edges in graph.items() if name.startswith("agentbon.report")}
    assert cycles(report) == []
