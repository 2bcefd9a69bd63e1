import pytest

from leaderboard import Result, parse_results, totals

CSV = """round,player,points
1,alice,12
1,bob,7
# bob's second answer sheet arrived late
2,bob, 9
2,alice,3
"""


def test_parse_results_skips_header_and_comments():
    assert parse_results(CSV) == [
        Result(1, "alice", 12),
        Result(1, "bob", 7),
        Result(2, "bob", 9),
        Result(2, "alice", 3),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [("1,alice\n", "line 1: expected"), ("1,alice,7\nx,bob,3\n", "line 2: round and points"), ("1,,7\n", "line 1")],
    ids=["short-row", "not-a-number", "no-player"],
)
def test_malformed_rows_name_their_line(text, message):
    with pytest.raises(ValueError, match=message):
        parse_results(text)


def test_totals():
    assert totals(parse_results(CSV)) == {"alice": 15, "bob": 16}


def test_totals_up_to_a_round():
    assert totals(parse_results(CSV), upto_round=1) == {"alice": 12, "bob": 7}
