"""The tamper guard: which changes of a candidate patch touch tests or the runner, and how to undo them.

A candidate may change test files, add a ``conftest.py`` that forces passes, add a ``.pth`` or
``sitecustomize`` that runs at interpreter start, add package metadata (``*.dist-info``) whose entry
points register a pytest plugin, edit pytest's configuration, or add a module
named ``pytest``/``xml`` at the repository root to replace the framework. Every such change is
flagged in ``Verdict.tampered`` and undone (restored to the base commit, or deleted when the patch
added it) before the role's test patch is applied and the tests run. Config files that also hold
other settings (``setup.cfg``, ``tox.ini``, ``pyproject.toml``) are flagged only when their pytest
section changed.
"""

from __future__ import annotations

import configparser
import shlex
import sys
import tomllib
from pathlib import PurePosixPath

from agentbon.diffs import files_touched, test_file_kind
from agentbon.types import Task, TestSet

FRAMEWORK_MODULES = frozenset({"pytest", "_pytest", "pluggy", "py", "iniconfig", "unittest", "xmlrunner"})
STARTUP_HOOKS = frozenset({"sitecustomize", "usercustomize"})
RUNNER_CONFIG = frozenset({"pytest.ini", ".pytest.ini", ".gitattributes"})
SECTIONED_CONFIG = {"setup.cfg": "tool:pytest", "tox.ini": "pytest", "pyproject.toml": "tool.pytest"}
"""Config files that protect only their pytest section: file name → section."""

def task_files(task: Task) -> set[str]:
    """Files the task names as tests in either role: listed files, files of test ids, files its test patches touch."""
    out: set[str] = set()
    for tests in (task.evidence, task.grade):
        out.update(_set_files(tests))
    return out


def _set_files(tests: TestSet) -> set[str]:
    out = set(tests.files) | set(files_touched(tests.patch))
    hosts: dict[str, bool] = {}  # path -> whether every id in it is a doctest of a code module
    for test_id in tests.tests:
        path = test_id.split("::", 1)[0]
        if "::" in test_id or path.endswith(".py"):
            hosts[path] = hosts.get(path, True) and doctest_in_code(test_id)
    out.update(path for path, code in hosts.items() if not code or why_protected(path, set()))
    return out


def doctest_in_code(test_id: str) -> bool:
    """Whether ``test_id`` is a doctest that pytest's ``--doctest-modules`` collects from a module of the code
    (``parse/__init__.py::parse.with_pattern``): the file is the code a fix changes, not a test file to restore
    (docs/security.md, "Doctests in code modules")."""
    path, _, name = test_id.partition("::")
    return path.endswith(".py") and "::" not in name and "." in name.split("[", 1)[0]


def why_protected(path: str, protected: set[str]) -> str | None:
    """Why changing ``path`` counts as tampering (test file, conftest, runner config, startup hook), or None."""
    p, test = PurePosixPath(path), test_file_kind(path)
    name = p.name
    if path in protected:
        return "task test file"
    if test == "conftest":
        return test
    if name in RUNNER_CONFIG:
        return "runner config"
    if name.endswith(".pth") or any(part.removesuffix(".py") in STARTUP_HOOKS for part in p.parts):
        return "interpreter startup hook"
    if any(part.endswith((".dist-info", ".egg-info")) for part in p.parts[:-1]):
        return "package metadata (could register a pytest plugin)"
    return test  # a test file, or one under a test directory (diffs.test_file_kind)


def may_shadow(path: str) -> bool:
    """True when the first component of ``path`` is named like a standard-library or test-framework module."""
    module = PurePosixPath(path).parts[0].removesuffix(".py")
    return module in FRAMEWORK_MODULES or module in sys.stdlib_module_names


def shadows_module(path: str, top_level_at_base: set[str]) -> bool:
    """True when ``path`` adds a new top-level module that shadows the standard library or the test framework."""
    return PurePosixPath(path).parts[0] not in top_level_at_base and may_shadow(path)


def pytest_section_changed(name: str, base: str | None, new: str | None) -> bool:
    """Whether the pytest section of a sectioned config file differs (unparseable new content counts as changed)."""
    section = SECTIONED_CONFIG[PurePosixPath(name).name]
    try:
        return _section(name, section, base) != _section(name, section, new)
    except (ValueError, configparser.Error, tomllib.TOMLDecodeError):
        return True


def _section(name: str, section: str, text: str | None) -> object:
    text = text or ""  # an absent file has no pytest section, like a file without one
    if name.endswith(".toml"):
        data = tomllib.loads(text)
        for key in section.split("."):
            data = data.get(key, {}) if isinstance(data, dict) else {}
        return data
    parser = configparser.RawConfigParser(strict=False)
    parser.read_string(text)
    return dict(parser.items(section)) if parser.has_section(section) else None


def restore_script(flagged: list[tuple[str, str]]) -> str:
    """Shell commands that undo the flagged ``(git status letter, path)`` changes: delete additions, check out the rest."""
    added = [shlex.quote(p) for s, p in flagged if s == "A"]
    attrs = [shlex.quote(p) for s, p in flagged if s != "A" and PurePosixPath(p).name == ".gitattributes"]
    changed = [shlex.quote(p) for s, p in flagged if s != "A" and PurePosixPath(p).name != ".gitattributes"]
    cmds = []
    # Attributes first (an added or edited .gitattributes could re-encode the files checked out after it).
    if added:
        cmds.append("git rm -q -f --ignore-unmatch -- " + " ".join(added) + " && rm -rf -- " + " ".join(added))
    for group in (attrs, changed):
        if group:
            cmds.append("git checkout HEAD -- " + " ".join(group))
    return " && ".join(cmds) or "true"
