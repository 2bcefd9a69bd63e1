from leaderboard import rank, render


def test_render_lines_up_names_and_marks_shared_places():
    assert render(rank({"alice": 30, "bob": 20, "christopher": 20})) == (
        " 1. alice        30\n=2. bob          20\n=2. christopher  20\n"
    )


def test_render_nothing():
    assert render([]) == "(no results yet)\n"
