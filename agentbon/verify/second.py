"""The second, independent check of the FAIL_TO_PASS tests: what to ask, how to read the answer (docs/security.md).

A pure core; ``runner.TestVerifier._second_check`` does the I/O. When the first run says every graded
test passed, the FAIL_TO_PASS ids are run again in a sandbox opened fresh for this check (the candidate
applied and guarded again, the test patch applied again): ``verifiers/second_check.py`` starts a test process
that records each test from inside its own call and prints one line framed with this check's nonce. An id
the second check does not see pass is a disagreement; the verdict fails and is flagged.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass, field
from typing import cast

from agentbon.types import TestOutcome, TestSet

MARK = "AGENTBON-SECOND-CHECK"
SCRIPTS = ("second_check.py", "second_child.py", "pytest_boot.py", "agentbon_supervise.py")
RUNNERS = ("pytest", "unittest")
"""Runners the second check can drive (``command`` has no test ids; ``swebench`` instances whose log parser is
a pytest one are driven as ``pytest``: ``harness.pytest_family``, docs/security.md)."""


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
    if (runner or tests.runner) not in RUNNERS:
        return []
    passed = [t for t in tests.fail_to_pass if outcomes.get(t) == "passed"]
    return [t for t in passed if exact_pytest_id(t)] if tests.runner == "swebench" else passed


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
) -> dict:
    """The driver's spec (deleted by the driver before any code of the repository runs)."""
    return {
        "runner": runner or tests.runner,
        "ids": ids,
        "nonce": nonce,
        "timeout_s": timeout_s,
        "plugins": plugins,
        "plugin_autoload": autoload,
    }


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
