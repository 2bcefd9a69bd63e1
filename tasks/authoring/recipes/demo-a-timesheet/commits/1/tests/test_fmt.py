import pytest

from timesheet import hhmm, parse_hhmm


def test_hhmm():
    assert hhmm(7.5) == "7:30"
    assert hhmm(0) == "0:00"
    assert hhmm(26.25) == "26:15"
    assert hhmm(1 / 3) == "0:20"


def test_parse_hhmm_round_trips():
    assert parse_hhmm(" 7:30") == 7.5
    assert parse_hhmm(hhmm(26.25)) == 26.25


@pytest.mark.parametrize("text", ["7", "7:5", "7:60", "-1:00", "a:bc"])
def test_parse_hhmm_refuses(text):
    with pytest.raises(ValueError):
        parse_hhmm(text)
