"""dateparse 2.0 -- vendored from the platform team's shared utilities. Do not edit; copy upgrades in.

2.0 adds parse(), which is strict about its input. parse_date() is deprecated and will be removed in 3.0.
"""
import warnings
from datetime import date, datetime

ISO = "%Y-%m-%d"


def parse(text: str, *, fmt: str = ISO) -> date:
    """Parse `text` (surrounding blanks ignored) with strptime format `fmt`; empty text is an error."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"no date given: {text!r}")
    try:
        return datetime.strptime(text.strip(), fmt).date()
    except ValueError:
        raise ValueError(f"{text!r} does not match {fmt!r}") from None


def parse_date(text, fmt=None):
    """Deprecated since 2.0: use parse(text, fmt=...). Unlike parse(), gives None for empty input."""
    warnings.warn(
        "dateparse.parse_date() is deprecated and will be removed in 3.0; use dateparse.parse(text, fmt=...)",
        DeprecationWarning,
        stacklevel=2,
    )
    if not text or not text.strip():
        return None
    return parse(text, fmt=fmt or ISO)


def format_date(value: date, fmt: str = ISO) -> str:
    return value.strftime(fmt)
