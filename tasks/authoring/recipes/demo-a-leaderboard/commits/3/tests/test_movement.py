from leaderboard import movement, parse_results, rank, since_previous_round


def test_places_gained_and_lost():
    before = rank({"alice": 10, "bob": 8, "carol": 5})
    after = rank({"alice": 12, "bob": 20, "carol": 6, "dave": 30})
    assert movement(before, after) == {"alice": -2, "bob": 0, "carol": -1}


def test_since_previous_round():
    results = parse_results("1,alice,5\n1,bob,3\n2,bob,4\n2,carol,9\n")
    assert since_previous_round(results, 2) == {"alice": -2, "bob": 0}
