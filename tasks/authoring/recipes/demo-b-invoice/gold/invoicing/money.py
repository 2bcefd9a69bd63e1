"""Amounts of money as integer cents."""
import re

_AMOUNT = re.compile(r"-?\$?(\d{1,3}(,\d{3})+|\d+)(\.\d{1,2})?")


def parse_amount(text: str) -> int:
    """Parse a user-typed amount such as '1,234.50', '-3' or '$0.29' into cents."""
    clean = text.strip().replace(" ", "")
    if not _AMOUNT.fullmatch(clean):
        raise ValueError(f"not an amount: {text!r}")
    negative = clean.startswith("-")
    whole, _, frac = clean.lstrip("-").lstrip("$").replace(",", "").partition(".")
    cents = int(whole) * 100 + int(frac.ljust(2, "0"))
    return -cents if negative else cents


def format_cents(cents: int, symbol: str = "$") -> str:
    """Format cents as '$1,234.56' ('-$0.05' for negative amounts)."""
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{symbol}{whole:,}.{frac:02d}"
