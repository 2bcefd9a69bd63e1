import pytest

from tinycalc import CalcError, calc


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1 + 2 * 3", 7),
        ("(1 + 2) * 3", 9),
        ("1 + 2 + 3", 6),
        ("10 - 3", 7),
        ("8 / 2 / 2", 2),
        ("7 % 4", 3),
        ("2 * -3", -6),
        ("1.5 + .5", 2),
        ("2 ^ 3 ^ 2", 512),
        ("-2 ^ 2", -4),
        ("2 ^ -1", 0.5),
    ],
    ids=["precedence", "parens", "sum-chain", "minus", "div-chain", "mod", "neg-operand", "decimals",
         "pow-chain", "neg-pow", "pow-neg-exp"],
)
def test_arithmetic(text, expected):
    assert calc(text) == expected


def test_variables():
    assert calc("price * (1 + vat)", price=20, vat=0.25) == 25


def test_unknown_variable():
    with pytest.raises(CalcError, match="unknown variable 'qty'"):
        calc("qty * 2")


def test_division_by_zero():
    with pytest.raises(CalcError, match="division by zero"):
        calc("1 / (2 - 2)")
