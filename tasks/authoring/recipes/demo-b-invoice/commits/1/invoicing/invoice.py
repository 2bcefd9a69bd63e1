"""Invoices made of lines."""
from dataclasses import dataclass, field

from .money import parse_amount


@dataclass(frozen=True)
class Line:
    description: str
    quantity: int
    unit_cents: int

    @property
    def net(self) -> int:
        return self.quantity * self.unit_cents


@dataclass
class Invoice:
    number: str
    lines: list[Line] = field(default_factory=list)

    def add(self, description: str, quantity: int, unit_price: str) -> Line:
        """Append a line; `unit_price` is the amount as typed (e.g. '12.50')."""
        if quantity == 0:
            raise ValueError(f"line {description!r}: quantity must not be 0")
        line = Line(description, quantity, parse_amount(unit_price))
        self.lines.append(line)
        return line

    @property
    def subtotal(self) -> int:
        return sum(line.net for line in self.lines)
