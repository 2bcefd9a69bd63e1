from datetime import date

from timesheet import hours, parse_line, split_by_day


def test_hours():
    assert hours(parse_line("2024-03-04 09:00 -> 2024-03-04 12:45 | acme")) == 3.75


def test_hours_across_midnight():
    assert hours(parse_line("2024-03-04 22:00 -> 2024-03-05 06:30 | oncall")) == 8.5


def test_split_by_day():
    entry = parse_line("2024-03-04 22:00 -> 2024-03-05 06:30 | oncall")
    assert split_by_day(entry) == [(date(2024, 3, 4), 2.0), (date(2024, 3, 5), 6.5)]


def test_an_entry_within_one_day_is_not_split():
    entry = parse_line("2024-03-04 09:00 -> 2024-03-04 10:00 | acme")
    assert split_by_day(entry) == [(date(2024, 3, 4), 1.0)]
