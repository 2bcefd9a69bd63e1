from leaderboard import Standing, rank, top


def test_best_first():
    assert rank({"bob": 5, "alice": 9, "carol": 7}) == [
        Standing(1, "alice", 9),
        Standing(2, "carol", 7),
        Standing(3, "bob", 5),
    ]


def test_a_tie_shares_a_place_and_is_listed_by_name():
    assert rank({"carol": 20, "alice": 30, "bob": 20}) == [
        Standing(1, "alice", 30),
        Standing(2, "bob", 20),
        Standing(2, "carol", 20),
    ]


def test_nobody():
    assert rank({}) == []


def test_top_keeps_everyone_tied_at_the_cut():
    board = rank({"a": 30, "b": 20, "c": 20, "d": 10})
    assert [s.player for s in top(board, 2)] == ["a", "b", "c"]
    assert [s.player for s in top(board, 1)] == ["a"]
    assert top(board, 0) == []
