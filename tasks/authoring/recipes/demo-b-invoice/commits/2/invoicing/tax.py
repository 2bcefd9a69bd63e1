"""VAT rates and per-line VAT (see README for the rounding rule)."""

RATES = {"standard": 0.20, "reduced": 0.05, "zero": 0.0}


def rate_for(category: str) -> float:
    try:
        return RATES[category]
    except KeyError:
        raise ValueError(f"unknown VAT category {category!r}; expected one of {sorted(RATES)}") from None


def line_tax(net_cents: int, category: str) -> int:
    """VAT in cents on a line's net amount, rounded half-up to the cent."""
    return round(net_cents * rate_for(category))
