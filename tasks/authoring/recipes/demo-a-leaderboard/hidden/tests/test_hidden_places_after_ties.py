from leaderboard import movement, parse_results, rank, render, top, totals


def places(points):
    return [(s.place, s.player) for s in rank(points)]


def test_the_places_taken_by_a_tie_are_skipped():
    assert places({"alice": 30, "bob": 20, "carol": 20, "dave": 10}) == [
        (1, "alice"),
        (2, "bob"),
        (2, "carol"),
        (4, "dave"),
    ]
    assert places({"a": 5, "b": 5, "c": 5, "d": 3, "e": 1}) == [(1, "a"), (1, "b"), (1, "c"), (4, "d"), (5, "e")]
    assert places({"a": 9, "b": 7, "c": 7, "d": 7, "e": 7, "f": 2}) == [
        (1, "a"),
        (2, "b"),
        (2, "c"),
        (2, "d"),
        (2, "e"),
        (6, "f"),
    ]


def test_table_and_podium_after_a_tie():
    results = parse_results("round,player,points\n1,alice,30\n1,bob,20\n1,carol,20\n1,dave,10\n")
    board = rank(totals(results))
    assert render(board) == " 1. alice  30\n=2. bob    20\n=2. carol  20\n 4. dave   10\n"
    assert [s.player for s in top(board, 3)] == ["alice", "bob", "carol"]


def test_movement_counts_real_places():
    before = rank({"a": 10, "b": 10, "c": 5})
    after = rank({"c": 20, "a": 10, "b": 10})
    assert movement(before, after) == {"a": -1, "b": -1, "c": 2}
