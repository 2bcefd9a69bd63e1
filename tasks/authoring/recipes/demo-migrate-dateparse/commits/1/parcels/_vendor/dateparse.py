"""dateparse 1.4 -- vendored from the platform team's shared utilities. Do not edit; copy upgrades in."""
from datetime import date, datetime

ISO = "%Y-%m-%d"


def parse_date(text, fmt=None):
    """Parse `text` with strptime format `fmt` (ISO by default); empty or None gives None."""
    if not text or not text.strip():
        return None
    try:
        return datetime.strptime(text.strip(), fmt or ISO).date()
    except ValueError:
        raise ValueError(f"{text!r} does not match {fmt or ISO!r}") from None


def format_date(value: date, fmt: str = ISO) -> str:
    return value.strftime(fmt)
