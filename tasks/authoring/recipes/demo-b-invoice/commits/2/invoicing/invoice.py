"""Invoices made of lines."""
from dataclasses import dataclass, field

from .money import parse_amount
from .tax import line_tax, rate_for


@dataclass(frozen=True)
class Line:
    description: str
    quantity: int
    unit_cents: int
    category: str = "standard"

    @property
    def net(self) -> int:
        return self.quantity * self.unit_cents

    @property
    def tax(self) -> int:
        return line_tax(self.net, self.category)


@dataclass
class Invoice:
    number: str
    lines: list[Line] = field(default_factory=list)

    def add(self, description: str, quantity: int, unit_price: str, category: str = "standard") -> Line:
        """Append a line; `unit_price` is the amount as typed (e.g. '12.50')."""
        if quantity == 0:
            raise ValueError(f"line {description!r}: quantity must not be 0")
        rate_for(category)  # reject unknown categories when the line is added, not when totals are read
        line = Line(description, quantity, parse_amount(unit_price), category)
        self.lines.append(line)
        return line

    @property
    def subtotal(self) -> int:
        return sum(line.net for line in self.lines)

    @property
    def tax_total(self) -> int:
        return sum(line.tax for line in self.lines)

    @property
    def total(self) -> int:
        return self.subtotal + self.tax_total

    def tax_by_category(self) -> dict[str, int]:
        """VAT per category, in order of first appearance."""
        out: dict[str, int] = {}
        for line in self.lines:
            out[line.category] = out.get(line.category, 0) + line.tax
        return out
