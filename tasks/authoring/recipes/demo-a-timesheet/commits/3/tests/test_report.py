from datetime import date

from timesheet import by_day, by_project, parse, render

SHEET = """
2024-03-04 09:00 -> 2024-03-04 12:30 | acme | API review
2024-03-04 13:30 -> 2024-03-04 17:00 | globex | migration
2024-03-04 22:00 -> 2024-03-05 01:15 | oncall | disk alert
2024-03-05 09:00 -> 2024-03-05 11:00 | acme | planning
"""


def test_by_project():
    assert by_project(parse(SHEET)) == {"acme": 5.5, "globex": 3.5, "oncall": 3.25}


def test_by_day_counts_a_night_entry_on_both_days():
    assert by_day(parse(SHEET)) == {date(2024, 3, 4): 9.0, date(2024, 3, 5): 3.25}


def test_render():
    assert render(parse(SHEET)) == ("acme      5:30\nglobex    3:30\noncall    3:15\ntotal    12:15\n")


def test_render_nothing():
    assert render([]) == "total    0:00\n"


def test_by_project_rounds_each_entry_up():
    sheet = "2024-03-04 09:00 -> 2024-03-04 09:05 | acme\n2024-03-04 10:00 -> 2024-03-04 10:20 | acme\n"
    assert by_project(parse(sheet), step=0.25) == {"acme": 0.75}
    assert render(parse(sheet), step=0.25).endswith("total    0:45\n")
