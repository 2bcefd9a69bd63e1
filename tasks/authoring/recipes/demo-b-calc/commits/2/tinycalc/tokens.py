"""Tokenizer for arithmetic expressions."""
import re
from dataclasses import dataclass


class CalcError(ValueError):
    """Invalid expression, unknown variable or arithmetic error."""


@dataclass(frozen=True)
class Token:
    kind: str  # NUM, NAME, OP, LPAREN, RPAREN or END
    value: str
    position: int


_TOKEN = re.compile(
    r"\s*(?:(?P<NUM>\d+(?:\.\d*)?|\.\d+)|(?P<NAME>[A-Za-z_]\w*)|(?P<OP>[-+*/%^])|(?P<LPAREN>\()|(?P<RPAREN>\)))"
)


def tokenize(text: str) -> list[Token]:
    """Split `text` into tokens, ending with an END token."""
    tokens, pos, end = [], 0, len(text.rstrip())
    while pos < end:
        match = _TOKEN.match(text, pos)
        if match is None:
            bad = len(text) - len(text[pos:].lstrip())
            raise CalcError(f"unexpected character {text[bad]!r} at position {bad}")
        kind = match.lastgroup
        tokens.append(Token(kind, match.group(kind), match.start(kind)))
        pos = match.end()
    tokens.append(Token("END", "", len(text)))
    return tokens
