from datetime import datetime

import pytest

from timesheet import Entry, parse, parse_line


def test_parse_line():
    entry = parse_line("2024-03-04 09:00 -> 2024-03-04 12:30 | ACME | API review ")
    assert entry == Entry(datetime(2024, 3, 4, 9), datetime(2024, 3, 4, 12, 30), "acme", "API review")


def test_the_note_is_optional():
    assert parse_line("2024-03-04 09:00 -> 2024-03-04 10:00 | acme").note == ""


def test_parse_skips_comments_and_blank_lines_and_sorts():
    text = """
    # week 10
    2024-03-05 09:00 -> 2024-03-05 10:00 | acme | later
    2024-03-04 09:00 -> 2024-03-04 10:00 | acme | earlier
    """
    assert [e.note for e in parse(text)] == ["earlier", "later"]


@pytest.mark.parametrize(
    "line",
    [
        "2024-03-04 09:00 2024-03-04 10:00 | acme",
        "2024-03-04 09:00 -> 2024-03-04 10:00",
        "2024-03-04 10:00 -> 2024-03-04 09:00 | acme",
        "2024-03-04 9am -> 2024-03-04 10:00 | acme",
    ],
    ids=["no-arrow", "no-project", "backwards", "bad-time"],
)
def test_bad_lines_are_refused(line):
    with pytest.raises(ValueError):
        parse_line(line)


def test_errors_name_the_line():
    with pytest.raises(ValueError, match="line 2: "):
        parse("2024-03-04 09:00 -> 2024-03-04 10:00 | acme\nnonsense\n")
