"""tinycalc: safe arithmetic expression evaluation."""
from .evaluator import evaluate
from .parser import parse
from .tokens import CalcError

__all__ = ["CalcError", "calc", "evaluate", "parse"]


def calc(text: str, **variables):
    """Parse and evaluate `text` with the given variables."""
    return evaluate(parse(text), variables)
