"""Plain-text invoices."""
from .invoice import Invoice
from .money import format_cents
from .tax import RATES


def render(invoice: Invoice) -> str:
    """The invoice as fixed-width text: one row per line, then subtotal, VAT per category, total."""
    rows = [f"Invoice {invoice.number}"]
    for line in invoice.lines:
        rows.append(f"{line.quantity:>4} x {line.description:<24}{format_cents(line.net):>12}")
    rows.append(f"{'Subtotal':<31}{format_cents(invoice.subtotal):>12}")
    for category, amount in invoice.tax_by_category().items():
        label = f"VAT {category} {RATES[category]:.0%}"
        rows.append(f"{label:<31}{format_cents(amount):>12}")
    rows.append(f"{'Total':<31}{format_cents(invoice.total):>12}")
    return "\n".join(rows)
