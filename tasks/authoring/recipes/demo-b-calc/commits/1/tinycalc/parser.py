"""Recursive-descent parser producing trees of tinycalc.nodes."""
from .nodes import BinOp, Neg, Num, Var
from .tokens import CalcError, Token, tokenize


class Parser:
    def __init__(self, tokens: list[Token]):
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def accept_op(self, ops: str) -> str | None:
        """Consume and return the next token's operator if it is one of `ops`."""
        tok = self.peek()
        if tok.kind == "OP" and tok.value in ops:
            self.pos += 1
            return tok.value
        return None

    def parse(self):
        node = self.expr()
        tok = self.peek()
        if tok.kind != "END":
            raise CalcError(f"unexpected {tok.value!r} at position {tok.position}")
        return node

    def expr(self):
        left = self.term()
        op = self.accept_op("+-")
        if op:
            return BinOp(op, left, self.expr())
        return left

    def term(self):
        node = self.unary()
        while op := self.accept_op("*/%"):
            node = BinOp(op, node, self.unary())
        return node

    def unary(self):
        if self.accept_op("-"):
            return Neg(self.unary())
        if self.accept_op("+"):
            return self.unary()
        return self.atom()

    def atom(self):
        tok = self.peek()
        self.pos += 1
        if tok.kind == "NUM":
            return Num(float(tok.value) if "." in tok.value else int(tok.value))
        if tok.kind == "NAME":
            return Var(tok.value)
        if tok.kind == "LPAREN":
            node = self.expr()
            if self.peek().kind != "RPAREN":
                raise CalcError(f"expected ')' at position {self.peek().position}")
            self.pos += 1
            return node
        what = "end of input" if tok.kind == "END" else repr(tok.value)
        raise CalcError(f"unexpected {what} at position {tok.position}")


def parse(text: str):
    """Parse `text` into an expression tree."""
    return Parser(tokenize(text)).parse()
