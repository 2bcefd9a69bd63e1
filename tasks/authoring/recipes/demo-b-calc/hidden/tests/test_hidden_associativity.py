from tinycalc import calc, parse
from tinycalc.nodes import BinOp, Num, Var


def test_additive_chains_evaluate_left_to_right():
    assert calc("10 - 4 - 3") == 3
    assert calc("1 - 2 + 3") == 2
    assert calc("2 ^ 2 - 1 - 1") == 2


def test_additive_chain_is_left_nested():
    assert parse("a - b + c") == BinOp("+", BinOp("-", Var("a"), Var("b")), Var("c"))
    assert parse("1 - 2 * 3 - 4") == BinOp("-", BinOp("-", Num(1), BinOp("*", Num(2), Num(3))), Num(4))


def test_balance_formula():
    assert calc("opening - fees - tax + refunds", opening=100, fees=30, tax=20, refunds=5) == 55
