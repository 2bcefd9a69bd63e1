"""Flaky tests in grading: what ``tasks validate`` found unstable, left out of the grade or decided k of m.

A test whose outcome differed between runs of the same patch in ``agentbon tasks validate`` is flaky; the suite
keeps the map (``flaky.json`` beside it, read by the loader into ``TestSet.flaky``). Grading then treats those tests
by ``verify.flaky`` (docs/failure-taxonomy.md, "Flaky tests"):

- ``rerun`` (default): each flaky test that is graded is run until it passed ``flaky_passes`` times or can no longer
  reach that in ``flaky_runs`` runs; it counts as passed iff it reached it.
- ``exclude``: flaky tests are left out of the grade. Where that would leave no FAIL_TO_PASS test (the empty patch
  would then resolve), the flaky FAIL_TO_PASS tests stay in, decided k of m.
- ``strict``: the map is ignored; one run decides, as for every other test.

A runner that cannot run a subset again (the SWE-bench harness's eval script, a ``command``) leaves them out where
``exclude`` may, else grades them on their one run; the verdict's ``flaky`` says which it was, per test.
This module is the pure core: which tests, and what their runs add up to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agentbon.files import write_atomic
from agentbon.types import TestOutcome, TestSet

MAP_FILE = "flaky.json"
MAP_VERSION = 1
RERUNNABLE = ("pytest", "unittest")


@dataclass(frozen=True)
class Treatment:
    """How one verification grades the test set's flaky tests."""

    graded: TestSet
    """The set graded: ``tests`` without the excluded ones."""
    rerun: list[str] = field(default_factory=list)
    """Flaky tests still graded, decided k of m."""
    notes: dict[str, str] = field(default_factory=dict)
    """Per flaky test, how it was treated (completed by ``decide`` for the rerun ones): ``Verdict.flaky``."""


def treatment(tests: TestSet, mode: str, runs: int) -> Treatment:
    """Which of ``tests``' flaky tests are graded, and how (``mode``: rerun, exclude or strict)."""
    flaky = [t for t in tests.tests if t in tests.flaky]
    if mode == "strict" or not flaky or tests.runner == "command":
        return Treatment(graded=tests)
    rerunnable = tests.runner in RERUNNABLE and runs > 1
    exclude = set(flaky) if mode == "exclude" or not rerunnable else set()
    if exclude and tests.fail_to_pass and all(t in exclude for t in tests.fail_to_pass):
        exclude -= set(tests.fail_to_pass)  # else nothing would need the fix: keep them, decided k of m
    graded = tests.model_copy(
        update={
            "fail_to_pass": [t for t in tests.fail_to_pass if t not in exclude],
            "pass_to_pass": [t for t in tests.pass_to_pass if t not in exclude],
        }
    )
    notes = {t: "excluded from the grade" for t in flaky if t in exclude}
    kept = [t for t in flaky if t not in exclude]
    if not rerunnable:
        why = "the harness runs once" if tests.runner == "swebench" else f"{tests.runner} cannot rerun a subset"
        notes.update({t: f"graded on one run ({why}; excluding it would leave no FAIL_TO_PASS)" for t in kept})
        return Treatment(graded=graded, notes=notes)
    return Treatment(graded=graded, rerun=kept, notes=notes)


def undecided(outcomes: Sequence[Mapping[str, TestOutcome]], ids: Sequence[str], runs: int, passes: int) -> list[str]:
    """The ids that another run could still change: fewer than ``passes`` passes, and enough runs left to reach it."""
    left = runs - len(outcomes)
    out = []
    for t in ids:
        passed = sum(o.get(t) == "passed" for o in outcomes)
        if passed < passes and passed + left >= passes:
            out.append(t)
    return out


def decide(
    outcomes: Sequence[Mapping[str, TestOutcome]], ids: Sequence[str], passes: int
) -> tuple[dict[str, TestOutcome], dict[str, str]]:
    """Each id's outcome over its runs (``passed`` iff it passed ``passes`` times; else its last other outcome),
    and a note per id saying so."""
    decided: dict[str, TestOutcome] = {}
    notes: dict[str, str] = {}
    for t in ids:
        seen = [o[t] for o in outcomes if t in o]
        passed = sum(s == "passed" for s in seen)
        if passed >= passes:
            decided[t] = "passed"
        else:
            decided[t] = next((s for s in reversed(seen) if s != "passed"), "missing")
        notes[t] = f"passed {passed} of {len(seen)} run(s), {passes} needed"
    return decided, notes


# ------------------------------------------------------------------------------------------------- the map


def map_path(suite: str | Path) -> Path:
    """Where a suite keeps its flaky map: ``flaky.json`` in a suite (or task) folder, ``<file>.flaky.json`` beside
    a JSONL or JSON file of tasks."""
    suite = Path(suite)
    if suite.is_dir():
        return suite / MAP_FILE
    if suite.name == "task.yaml" or suite.suffix in (".yaml", ".yml"):
        return suite.parent / MAP_FILE
    return suite.with_name(suite.name + "." + MAP_FILE)


class MapError(ValueError):
    """The flaky map is not what ``tasks validate`` writes."""


def read_map(path: Path) -> dict[str, dict[str, str]]:
    """Task id -> flaky test id -> what was seen; empty when there is no map."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise MapError(f"cannot read: {e}") from e
    tasks = data.get("tasks") if isinstance(data, dict) else None
    if not isinstance(tasks, dict) or not all(
        isinstance(tests, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in tests.items())
        for tests in tasks.values()
    ):
        raise MapError('expected {"version": 1, "tasks": {task id: {test id: what was seen}}}')
    return {str(task): dict(tests) for task, tests in tasks.items()}


def write_map(path: Path, found: Mapping[str, Mapping[str, str]], runs: int) -> None:
    """Update the map with what one validation found for each task in ``found`` (an empty mapping clears a task);
    tasks not validated this time keep their entries."""
    current = read_map(path) if path.is_file() else {}
    for task, tests in found.items():
        if tests:
            current[task] = dict(sorted(tests.items()))
        else:
            current.pop(task, None)
    body = {"version": MAP_VERSION, "runs": runs, "tasks": dict(sorted(current.items()))}
    write_atomic(path, json.dumps(body, indent=1) + "\n")
