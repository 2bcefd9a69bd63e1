import pytest

from tinycalc import CalcError, parse
from tinycalc.nodes import BinOp, Neg, Num, Var


def test_multiplication_binds_tighter():
    assert parse("1 + 2 * x") == BinOp("+", Num(1), BinOp("*", Num(2), Var("x")))


def test_division_chain_is_left_nested():
    assert parse("a / b / c") == BinOp("/", BinOp("/", Var("a"), Var("b")), Var("c"))


def test_parentheses_group():
    assert parse("(1 + 2) * 3") == BinOp("*", BinOp("+", Num(1), Num(2)), Num(3))


def test_unary_minus():
    assert parse("-x * 2") == BinOp("*", Neg(Var("x")), Num(2))


def test_trailing_tokens_are_rejected():
    with pytest.raises(CalcError, match="unexpected '3' at position 4"):
        parse("(1) 3")


def test_missing_close_paren():
    with pytest.raises(CalcError, match=r"expected '\)'"):
        parse("(1 + 2")


def test_empty_input():
    with pytest.raises(CalcError, match="end of input"):
        parse("   ")


def test_power_is_right_nested():
    assert parse("2 ^ 3 ^ 2") == BinOp("^", Num(2), BinOp("^", Num(3), Num(2)))


def test_power_binds_tighter_than_unary_minus():
    assert parse("-2 ^ 2") == Neg(BinOp("^", Num(2), Num(2)))
