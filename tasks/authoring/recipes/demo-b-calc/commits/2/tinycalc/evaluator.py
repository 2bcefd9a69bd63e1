"""Evaluate expression trees."""
import operator

from .nodes import BinOp, Neg, Num, Var
from .tokens import CalcError


def _div(a, b):
    if b == 0:
        raise CalcError("division by zero")
    return a / b


def _mod(a, b):
    if b == 0:
        raise CalcError("modulo by zero")
    return a % b


def _pow(a, b):
    if a == 0 and b < 0:
        raise CalcError("zero to a negative power")
    return a**b


BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": _div, "%": _mod, "^": _pow}


def evaluate(node, variables=None):
    """Compute the value of `node`; names are looked up in `variables`."""
    variables = variables or {}
    match node:
        case Num(value):
            return value
        case Var(name):
            if name not in variables:
                raise CalcError(f"unknown variable {name!r}")
            return variables[name]
        case Neg(operand):
            return -evaluate(operand, variables)
        case BinOp(op, left, right):
            return BINARY[op](evaluate(left, variables), evaluate(right, variables))
    raise TypeError(f"not an expression node: {node!r}")
