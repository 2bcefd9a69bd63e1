"""Canary tests: planted beside the graded tests, run in the same session, checked afterwards (docs/security.md).

A pure core. ``plan`` names, for each directory that holds graded test files, one test module with an
unpredictable name (``test_<hex>.py``) whose tests must pass and must fail; the runner scripts write the
modules just before the test process starts, run them in the same pytest invocation (or unittest process) as
the graded tests, and delete them as soon as it ends. ``problems`` says why a session's canaries did not come
out as planted: a must-fail canary that passed, a must-pass one that failed, one missing from the JUnit XML,
one whose file changed during the run, or a test process that exited 0 although a canary was planted to fail.
Any of these means the session's results are not the tests' own: the verdict is ``forged``.

Both kinds of test pytest runs are planted (a plain function and a ``unittest.TestCase``), so that a rewrite
aimed at either kind of graded test also meets a canary of its kind. The ``command`` runner has no test ids
and the ``swebench`` runner runs the harness's own test command, so neither gets canaries (for ``swebench``, a
must-fail canary would disarm the harness's exit-code cross-check: docs/security.md, "Canaries").
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from agentbon.types import Runner
from agentbon.verify.junit import Case, outcomes_for

MAX_DIRS = 8
"""Directories that get a canary module (the first ones, in the order of the graded ids)."""
Must = Literal["pass", "fail"]


@dataclass(frozen=True)
class Canary:
    """One planted test: its id (in the runner's id form) and how it must come out."""

    test_id: str
    must: Must


@dataclass(frozen=True)
class CanaryFile:
    """A canary module: its path relative to the repository root and its source."""

    path: str
    source: str


@dataclass(frozen=True)
class Plan:
    """What to plant for one test session and what to expect from it."""

    runner: Runner
    files: tuple[CanaryFile, ...]
    canaries: tuple[Canary, ...]

    @property
    def ids(self) -> list[str]:
        return [c.test_id for c in self.canaries]

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]

    def spec(self) -> dict:
        """The part of the runner's spec that tells it what to plant (``verifiers/agentbon_canary.py``)."""
        return {"files": [{"path": f.path, "source": f.source} for f in self.files], "ids": self.ids}


def folder_of(runner: Runner, test_id: str) -> str | None:
    """The directory of a graded test's file (``""`` for the repository root; None where the id names none inside
    the repository)."""
    if "::" in test_id or test_id.endswith(".py"):
        folder = str(PurePosixPath(test_id.split("::", 1)[0]).parent)
    elif runner == "unittest":  # dotted: package.module.Class.method -> the module's package
        parts = test_id.split(".")
        first_class = next((i for i, p in enumerate(parts) if p[:1].isupper()), len(parts) - 1)
        folder = "/".join(parts[: max(first_class - 1, 0)])
    else:
        return None
    folder = "" if folder in (".", "") else folder
    if folder.startswith("/") or ".." in folder.split("/"):
        return None  # not inside the repository: the graded id is broken, no canary goes there
    return folder


def directories(runner: Runner, ids: Iterable[str]) -> list[str]:
    """The directories of the graded test files, in order, without repeats (``""`` for the repository root)."""
    out: list[str] = []
    for test_id in ids:
        folder = folder_of(runner, test_id)
        if folder is not None and folder not in out:
            out.append(folder)
    return out[:MAX_DIRS] or [""]


def broken_folders(runner: Runner, graded: Mapping[str, str]) -> set[str]:
    """Directories all of whose graded tests ended in ``error``: the code they import is broken (a package whose
    ``__init__`` raises), and a canary planted there cannot even be collected. Its ``error`` is then no sign of
    forgery: the verdict fails on those graded tests whatever the canaries say."""
    seen: dict[str, set[str]] = {}
    for test_id, outcome in graded.items():
        folder = folder_of(runner, test_id)
        if folder is not None:
            seen.setdefault(folder, set()).add(outcome)
    return {folder for folder, outcomes in seen.items() if outcomes == {"error"}}


def plan(runner: Runner, ids: Iterable[str], token: Callable[[int], str] = secrets.token_hex) -> Plan | None:
    """Canaries for a session of ``runner`` over the graded ``ids`` (None for runners that get none)."""
    if runner not in ("pytest", "unittest"):
        return None
    files, canaries = [], []
    for folder in directories(runner, ids):
        module = f"test_{token(6)}"
        path = f"{folder}/{module}.py" if folder else f"{module}.py"
        names = {key: f"test_{token(6)}" for key in ("f_pass", "f_fail", "m_pass", "m_fail")}
        cls = f"Test{token(6)}"
        files.append(CanaryFile(path, _source(runner, names, cls, token)))
        if runner == "pytest":
            canaries += [Canary(f"{path}::{names['f_pass']}", "pass"), Canary(f"{path}::{names['f_fail']}", "fail")]
            prefix = f"{path}::{cls}::"
        else:
            prefix = ".".join([*(folder.split("/") if folder else []), module, cls]) + "."
        canaries += [Canary(prefix + names["m_pass"], "pass"), Canary(prefix + names["m_fail"], "fail")]
    return Plan(runner, tuple(files), tuple(canaries))


def _source(runner: Runner, names: dict[str, str], cls: str, token: Callable[[int], str]) -> str:
    """A small module of arithmetic checks, half of them wrong on purpose; definitions in random order."""
    a, b = (int(token(2), 16) + 2 for _ in range(2))
    funcs = [
        f"def {names['f_pass']}():\n    assert {a} + {b} == {a + b}\n",
        f"def {names['f_fail']}():\n    assert {a} + {b} == {a + b + 1}\n",
    ]
    methods = [
        f"    def {names['m_pass']}(self):\n        self.assertEqual({a} * {b}, {a * b})\n",
        f"    def {names['m_fail']}(self):\n        self.assertEqual({a} * {b}, {a * b - 1})\n",
    ]
    shuffle = random.Random(int(token(4), 16)).shuffle
    shuffle(funcs)
    shuffle(methods)
    blocks = [f"class {cls}(unittest.TestCase):\n" + "\n".join(methods)]
    if runner == "pytest":
        blocks += funcs
        shuffle(blocks)
    return "import unittest\n\n\n" + "\n\n".join(blocks)


def problems(
    plan: Plan, cases: list[Case] | None, exit_code: int | None, changed: Iterable[str] = (),
    graded: Mapping[str, str] | None = None,
) -> list[str]:
    """Why the session's canaries did not come out as planted (empty when they did).

    ``cases`` is None when the run wrote no JUnit XML: then only the exit code and the files can be checked.
    ``graded``: the graded tests' outcomes; a canary that errored in a directory whose graded tests all errored
    is not a problem (``broken_folders``).
    """
    out = [f"canary file {p} changed during the run" for p in sorted(set(changed) & set(plan.paths))]
    got = outcomes_for(plan.ids, cases, plan.runner) if cases is not None else {}
    broken = broken_folders(plan.runner, graded or {})
    for canary in plan.canaries if cases is not None else ():
        outcome = got[canary.test_id]
        want = "passed" if canary.must == "pass" else "failed"
        if outcome == "error" and folder_of(plan.runner, canary.test_id) in broken:
            continue
        if outcome == "missing":
            out.append(f"canary {canary.test_id} is missing from the JUnit XML")
        elif outcome != want:
            out.append(f"canary {canary.test_id} {outcome} but was planted to {canary.must}")
    if exit_code == 0:
        planted = next(c.test_id for c in plan.canaries if c.must == "fail")
        out.append(f"the test process exited 0 although canary {planted} was planted to fail")
    return out
