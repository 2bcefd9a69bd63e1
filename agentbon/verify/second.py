"""The second, independent check of the FAIL_TO_PASS tests: what to ask, how to read the answer (docs/security.md).

A pure core; ``runner.TestVerifier._second_check`` does the I/O. When the first run says every graded
test passed, the FAIL_TO_PASS ids are run again in a sandbox opened fresh for this check (the candidate
applied and guarded again, the test patch applied again): ``verifiers/second_check.py`` starts a test process
that records each test from inside its own call and prints one line framed with this check's nonce. An id
the second check does not see pass is a disagreement; the verdict fails and is flagged.
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from typing import cast

from agentbon.types import TestOutcome, TestSet

MARK = "AGENTBON-SECOND-CHECK"
SCRIPTS = ("second_check.py", "second_child.py", "pytest_boot.py", "agentbon_supervise.py")
RUNNERS = ("pytest", "unittest", "pytest-plain", "django", "sympy")
"""Runners the second check can drive. ``command`` has no test ids. ``swebench`` instances are driven by their
log parser (``harness.second_runner``, docs/security.md): pytest node ids (``pytest-plain``: only those without
parameters), Django's ``tests/runtests.py`` with method ids as labels, SymPy's test functions; instances of
other languages' runners are not driven."""
_DJANGO_ID = re.compile(r"(\w+) \(([\w.]+)\)")


@dataclass(frozen=True)
class Answer:
    """What the second check saw: each id's outcome, or why there is no answer."""

    outcomes: dict[str, TestOutcome] = field(default_factory=dict)
    timed_out: bool = False
    output: str = ""
    problem: str = ""
    """Why the answer could not be read (no framed line, two of them, bad JSON); empty when it was."""


def ids_to_check(tests: TestSet, outcomes: dict[str, TestOutcome], runner: str | None = None) -> list[str]:
    """The FAIL_TO_PASS ids the first run says passed (none where the runner cannot be driven).

    ``runner`` is how the ids are driven (``tests.runner`` unless given). Ids named by a SWE-bench log parser are
    checked only when they name one pytest item exactly (``exact_pytest_id``)."""
    runner = runner or tests.runner
    if runner not in RUNNERS:
        return []
    passed = [t for t in tests.fail_to_pass if outcomes.get(t) == "passed"]
    if tests.runner != "swebench":
        return passed
    exact = {
        "pytest": exact_pytest_id,
        "pytest-plain": lambda t: exact_pytest_id(t) and "[" not in t,
        "django": lambda t: django_label(t) is not None,
        "sympy": str.isidentifier,
    }.get(runner)
    return [t for t in passed if exact(t)] if exact else []


def django_label(test_id: str) -> str | None:
    """The unittest id (a ``runtests.py`` label) of a Django log id: ``test_x (app.tests.C)`` and, as Django
    prints it on Python 3.11+, ``test_x (app.tests.C.test_x)`` are ``app.tests.C.test_x``. None for the
    docstring lines the harness sometimes keeps as ids: they name no method."""
    found = _DJANGO_ID.fullmatch(test_id)
    if found is None:
        return None
    name, where = found.groups()
    return where if where.endswith(f".{name}") else f"{where}.{name}"


def exact_pytest_id(test_id: str) -> bool:
    """Whether a SWE-bench id is a whole pytest node id (``path.py::[Class::]name[params]``).

    Not: ids without a ``.py`` path, ids cut off inside their parameters (unbalanced brackets; the harness
    matches those by prefix), and ids whose parameters start with ``/`` (``parse_log_pytest_options`` shortens
    those paths, so the id is not the node id pytest reports)."""
    path, sep, rest = test_id.partition("::")
    if not sep or not path.endswith(".py") or not rest or any(c.isspace() for c in path):
        return False
    if test_id.count("[") != test_id.count("]"):
        return False
    _, bracket, params = rest.partition("[")
    return not (bracket and params.startswith("/"))


def spec(
    tests: TestSet,
    ids: list[str],
    nonce: str,
    timeout_s: float,
    plugins: list[str],
    autoload: bool,
    runner: str | None = None,
    command: str = "",
) -> dict:
    """The driver's spec (deleted by the driver before any code of the repository runs). ``command``: the harness's
    test command line, where the runner takes something from it (SymPy: the test files it names; Django: its
    ``--settings``)."""
    runner = runner or tests.runner
    out = {
        "runner": "pytest" if runner == "pytest-plain" else runner,
        "ids": [django_label(t) or t for t in ids] if runner == "django" else ids,
        "nonce": nonce,
        "timeout_s": timeout_s,
        "plugins": plugins,
        "plugin_autoload": autoload,
    }
    words = command.split()
    if runner == "sympy":
        out["files"] = list(dict.fromkeys(w for w in words if w.endswith(".py") and not w.startswith("-")))
        out["no_cache"] = "-C" in words or "--no-cache" in words
    if runner == "django":
        settings = re.search(r"--settings[= ](\S+)", command)
        out["settings"] = settings.group(1) if settings else ""
    return out


def new_nonce() -> str:
    return secrets.token_hex(16)


def read(output: str, nonce: str, ids: list[str]) -> Answer:
    """The driver's one framed line in ``output``; anything else there (the test process's noise) is ignored."""
    prefix = f"{MARK} {nonce} "
    framed = [line[len(prefix) :] for line in output.splitlines() if line.startswith(prefix)]
    if len(framed) != 1:
        return Answer(problem=f"{len(framed)} answers from the second check's driver (expected one)")
    try:
        data = json.loads(framed[0])
        listed = [str(o) for o in data["outcomes"]]
    except (ValueError, KeyError, TypeError) as e:
        return Answer(problem=f"the second check's answer does not parse: {e!r}")
    if len(listed) != len(ids):
        return Answer(problem=f"the second check answered for {len(listed)} tests, not {len(ids)}")
    outcomes = {t: cast(TestOutcome, o) for t, o in zip(ids, listed, strict=True)}
    return Answer(outcomes=outcomes, timed_out=bool(data.get("timed_out")), output=str(data.get("output", "")))


def disagreements(ids: list[str], answer: Answer) -> list[str]:
    """The ids the first run says passed but the second check did not see pass, with what it saw."""
    return [f"{t} {answer.outcomes.get(t, 'missing')}" for t in ids if answer.outcomes.get(t) != "passed"]
