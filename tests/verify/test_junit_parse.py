"""JUnit XML parsing and the id → testcase mapping (pytest xunit2, unittest, command)."""

import pytest

from agentbon.verify.junit import MAX_CASE_SECONDS, Case, JUnitError, durations_for, key_of, outcomes_for, parse_junit

XML = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.test_a" name="test_ok" time="0.1"/>
<testcase classname="tests.test_a" name="test_bad"><failure message="assert 1 == 2">tb</failure></testcase>
<testcase classname="tests.test_a.TestK" name="test_p[1-2]"/>
<testcase classname="tests.test_a" name="test_skip"><skipped type="pytest.skip" message="s"/></testcase>
<testcase classname="tests.test_a" name="test_xf"><skipped type="pytest.xfail" message="x"/></testcase>
<testcase classname="tests.test_a" name="test_teardown"/>
<testcase classname="tests.test_a" name="test_teardown"><error message="teardown"/></testcase>
<testcase classname="" name="tests.test_broken"><error message="collection failure"/></testcase>
</testsuite></testsuites>"""


def test_outcomes_from_pytest_xunit2():
    ids = [
        "tests/test_a.py::test_ok",
        "tests/test_a.py::test_bad",
        "tests/test_a.py::TestK::test_p[1-2]",
        "tests/test_a.py::test_skip",
        "tests/test_a.py::test_xf",
        "tests/test_a.py::test_teardown",
        "tests/test_broken.py::test_x",
        "tests/test_a.py::test_absent",
    ]
    out = outcomes_for(ids, parse_junit(XML), "pytest")
    assert list(out.values()) == ["passed", "failed", "passed", "skipped", "xfailed", "error", "error", "missing"]


def test_keys_per_runner():
    assert key_of("tests/sub/test_m.py::TestC::test_f[a::b-1]", "pytest") == (
        "tests.sub.test_m.TestC",
        "test_f[a::b-1]",
    )
    assert key_of("pkg.tests.test_m.TestC.test_f", "unittest") == ("pkg.tests.test_m.TestC", "test_f")
    assert key_of("tests/test_m.py::TestC::test_f", "unittest") == ("tests.test_m.TestC", "test_f")
    assert key_of("anything", "command") == ("agentbon", "command")


@pytest.mark.parametrize(
    "data",
    [b"<testsuites><testcase", b'<!DOCTYPE x [<!ENTITY a "b">]><testsuites/>', b" " * (33 * 1024 * 1024)],
    ids=["truncated", "entities", "huge"],
)
def test_suspicious_or_broken_xml_is_refused(data):
    with pytest.raises(JUnitError):
        parse_junit(data)


def test_cases_record_the_worst_message():
    case = parse_junit(XML)[1]
    assert case == Case("tests.test_a", "test_bad", "failed", "assert 1 == 2")


def test_times_are_read_summed_per_test_and_never_trusted_past_sanity():
    xml = b"""<testsuite>
<testcase classname="t" name="test_a" time="0.25"/>
<testcase classname="t" name="test_b" time="0.5"/>
<testcase classname="t" name="test_b" time="0.25"><error message="teardown"/></testcase>
<testcase classname="t" name="test_neg" time="-3"/>
<testcase classname="t" name="test_nan" time="nan"/>
<testcase classname="t" name="test_inf" time="inf"/>
<testcase classname="t" name="test_word" time="fast"/>
<testcase classname="t" name="test_huge" time="1e12"/>
<testcase classname="t" name="test_none"/>
</testsuite>"""
    cases = parse_junit(xml)
    assert [c.seconds for c in cases] == [0.25, 0.5, 0.25, 0.0, 0.0, 0.0, 0.0, MAX_CASE_SECONDS, 0.0]
    ids = [f"t.py::test_{n}" for n in ("a", "b", "neg", "huge", "none", "absent")]
    assert durations_for(ids, cases, "pytest") == {
        "t.py::test_a": 0.25, "t.py::test_b": 0.75, "t.py::test_neg": 0.0, "t.py::test_huge": MAX_CASE_SECONDS,
        "t.py::test_none": 0.0,
    }  # fmt: skip
