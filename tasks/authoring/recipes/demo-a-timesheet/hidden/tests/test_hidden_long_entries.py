from datetime import date

from timesheet import by_day, by_project, hours, parse, parse_line, render, split_by_day


def test_entries_of_a_day_or_more_keep_every_hour():
    assert hours(parse_line("2024-03-08 18:00 -> 2024-03-10 18:00 | oncall")) == 48.0
    assert hours(parse_line("2024-03-08 06:00 -> 2024-03-09 08:30 | oncall")) == 26.5
    assert hours(parse_line("2024-03-09 00:00 -> 2024-03-10 00:00 | oncall")) == 24.0


def test_a_full_day_inside_a_long_entry_counts_24_hours():
    entry = parse_line("2024-03-08 18:00 -> 2024-03-10 18:00 | oncall")
    assert split_by_day(entry) == [(date(2024, 3, 8), 6.0), (date(2024, 3, 9), 24.0), (date(2024, 3, 10), 18.0)]


def test_weekend_on_call_in_the_reports():
    entries = parse(
        "2024-03-08 09:00 -> 2024-03-08 17:00 | acme\n2024-03-08 18:00 -> 2024-03-10 18:00 | oncall | weekend pager\n"
    )
    assert by_project(entries) == {"acme": 8.0, "oncall": 48.0}
    assert by_day(entries)[date(2024, 3, 9)] == 24.0
    assert render(entries, step=0.25) == "acme      8:00\noncall   48:00\ntotal    56:00\n"
