import pytest

from tinycalc.tokens import CalcError, tokenize


def kinds(text):
    return [(t.kind, t.value) for t in tokenize(text)]


def test_numbers_names_and_operators():
    assert kinds("x1 + 2.5*(y)") == [
        ("NAME", "x1"), ("OP", "+"), ("NUM", "2.5"), ("OP", "*"),
        ("LPAREN", "("), ("NAME", "y"), ("RPAREN", ")"), ("END", ""),
    ]


def test_leading_dot_number():
    assert kinds(".5") == [("NUM", ".5"), ("END", "")]


def test_positions():
    assert [t.position for t in tokenize("  12 - x ")] == [2, 5, 7, 9]


def test_unexpected_character_reports_position():
    with pytest.raises(CalcError, match="'#' at position 4"):
        tokenize("1 + # 2")
