"""JUnit XML parsing and the mapping from a runner's test ids to JUnit test cases.

Results are read from the XML the runner wrote, never from the test process's stdout (which a
candidate can fill with fake ``PASSED`` lines). The XML comes from a sandbox that ran untrusted
code, so it is size-capped and refused when it declares a DTD or entities.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from agentbon.types import Runner, TestOutcome

MAX_JUNIT_BYTES = 32 * 1024 * 1024
# Worse outcomes win when one test appears twice (a teardown error after a pass, colliding names).
_RANK: dict[str, int] = {"passed": 0, "xpassed": 1, "skipped": 2, "xfailed": 2, "missing": 3, "failed": 4, "error": 5}


class JUnitError(ValueError):
    """The JUnit XML is missing, too large, malformed or suspicious."""


@dataclass(frozen=True)
class Case:
    """One ``<testcase>``: its JUnit address and outcome."""

    classname: str
    name: str
    outcome: TestOutcome
    message: str = ""
    seconds: float = 0.0
    """Its ``time`` attribute: what the runner measured, in the sandbox that ran the candidate (only ever used to
    estimate what a subset of the tests costs, never to decide anything)."""


def parse_junit(data: bytes) -> list[Case]:
    """Every test case in a JUnit XML document (pytest xunit1/xunit2 or agentbon's own writer)."""
    if len(data) > MAX_JUNIT_BYTES:
        raise JUnitError(f"JUnit XML is {len(data)} bytes (limit {MAX_JUNIT_BYTES})")
    if b"<!DOCTYPE" in data or b"<!ENTITY" in data:
        raise JUnitError("JUnit XML declares a DTD or entities")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise JUnitError(f"JUnit XML does not parse: {e}") from e
    cases = []
    for el in root.iter("testcase"):
        cases.append(Case(el.get("classname", ""), el.get("name", ""), *_outcome(el), seconds=_seconds(el)))
    return cases


MAX_CASE_SECONDS = 86_400.0


def _seconds(el: ET.Element) -> float:
    """A case's ``time`` in seconds: 0 where it is missing, not a number, negative or not finite; at most a day."""
    try:
        value = float(el.get("time") or 0.0)
    except ValueError:
        return 0.0
    return min(value, MAX_CASE_SECONDS) if math.isfinite(value) and value > 0 else 0.0


def _outcome(el: ET.Element) -> tuple[TestOutcome, str]:
    found: list[tuple[TestOutcome, str]] = []
    for child in el:
        message = (child.get("message") or "")[:300]
        if child.tag == "error":
            found.append(("error", message))
        elif child.tag == "failure":
            found.append(("failed", message))
        elif child.tag == "skipped":
            xfail = child.get("type") in ("pytest.xfail", "unittest.expectedFailure", "xfailed")
            found.append(("xfailed" if xfail else "skipped", message))
    if not found:
        return "passed", ""
    return max(found, key=lambda f: _RANK[f[0]])


def key_of(test_id: str, runner: Runner) -> tuple[str, str]:
    """The ``(classname, name)`` a runner writes for ``test_id`` (pytest: as its ``mangle_test_address``)."""
    if runner == "command":
        return ("agentbon", "command")
    if runner == "unittest":
        dotted = _dotted(test_id)
        classname, _, name = dotted.rpartition(".")
        return (classname, name)
    path, bracket, params = test_id.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return (".".join(names[:-1]), names[-1])


def _dotted(test_id: str) -> str:
    if "::" not in test_id and not test_id.endswith(".py"):
        return test_id
    path, _, rest = test_id.partition("::")
    module = path[:-3] if path.endswith(".py") else path
    return ".".join([module.replace("/", "."), *[p for p in rest.split("::") if p]])


def outcomes_for(ids: list[str], cases: list[Case], runner: Runner) -> dict[str, TestOutcome]:
    """The outcome of each id: its case's outcome, ``error`` when its file failed to collect, else ``missing``."""
    by_key: dict[tuple[str, str], TestOutcome] = {}
    for case in cases:
        key = (case.classname, case.name)
        if key not in by_key or _RANK[case.outcome] > _RANK[by_key[key]]:
            by_key[key] = case.outcome
    # pytest reports a module that failed to import (or skipped itself at import) as one case with an
    # empty classname, named after the module: its tests take that outcome.
    modules = {c.name: by_key[("", c.name)] for c in cases if not c.classname}
    out: dict[str, TestOutcome] = {}
    for test_id in ids:
        key = key_of(test_id, runner)
        module = next((m for m in modules if key[0] == m or key[0].startswith(m + ".")), None)
        if key in by_key:
            out[test_id] = by_key[key]
        elif runner == "pytest" and module is not None:
            out[test_id] = modules[module]
        else:
            out[test_id] = "missing"
    return out


def durations_for(ids: list[str], cases: list[Case], runner: Runner) -> dict[str, float]:
    """Seconds each id's case took (summed where a name repeats: setup and teardown reported apart); ids without
    a case are left out."""
    by_key: dict[tuple[str, str], float] = {}
    for case in cases:
        key = (case.classname, case.name)
        by_key[key] = by_key.get(key, 0.0) + case.seconds
    out: dict[str, float] = {}
    for test_id in ids:
        key = key_of(test_id, runner)
        if key in by_key:
            out[test_id] = round(by_key[key], 4)
    return out


def summary(cases: list[Case]) -> dict[str, int]:
    """Counts of each outcome over all cases."""
    out: dict[str, int] = {}
    for case in cases:
        out[case.outcome] = out.get(case.outcome, 0) + 1
    return out
