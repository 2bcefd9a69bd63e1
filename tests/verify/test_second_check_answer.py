"""Reading the second check's answer (agentbon/verify/second.py): only the one line framed with this check's nonce."""

from __future__ import annotations

import json

from agentbon.types import TestSet
from agentbon.verify.second import MARK, disagreements, ids_to_check, read

IDS = ["t.py::a", "t.py::b"]


def _line(nonce: str, outcomes: object) -> str:
    return f"{MARK} {nonce} {json.dumps({'outcomes': outcomes, 'timed_out': False})}"


def test_the_framed_line_is_read_and_noise_ignored():
    output = "noise\n" + _line("other", ["passed", "passed"]) + "\n" + _line("n1", ["passed", "failed"]) + "\n"
    answer = read(output, "n1", IDS)
    assert answer.problem == "" and answer.outcomes == {"t.py::a": "passed", "t.py::b": "failed"}
    assert disagreements(IDS, answer) == ["t.py::b failed"]


def test_no_answer_two_answers_and_garbage_are_problems():
    assert read("nothing here", "n1", IDS).problem.startswith("0 answers")
    twice = _line("n1", ["passed", "passed"]) + "\n" + _line("n1", ["passed", "passed"])
    assert read(twice, "n1", IDS).problem.startswith("2 answers")
    assert "does not parse" in read(f"{MARK} n1 {{not json", "n1", IDS).problem
    assert "answered for 1 tests, not 2" in read(_line("n1", ["passed"]), "n1", IDS).problem


def test_only_passed_fail_to_pass_ids_of_drivable_runners_are_checked():
    tests = TestSet(fail_to_pass=["a", "b"], pass_to_pass=["c"])
    assert ids_to_check(tests, {"a": "passed", "b": "skipped", "c": "passed"}) == ["a"]
    assert ids_to_check(TestSet(runner="command", command="true"), {"command": "passed"}) == []
