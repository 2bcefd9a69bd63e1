"""Hours as ``h:mm`` text and back."""

from __future__ import annotations


def hhmm(hours: float) -> str:
    """``7.5`` -> ``"7:30"``; more than a day stays in hours (``26.25`` -> ``"26:15"``)."""
    if hours < 0:
        raise ValueError("negative duration")
    minutes = round(hours * 60)
    return f"{minutes // 60}:{minutes % 60:02d}"


def parse_hhmm(text: str) -> float:
    """``"7:30"`` -> ``7.5``."""
    whole, sep, minutes = text.strip().partition(":")
    if not sep or not whole.isdigit() or not minutes.isdigit() or len(minutes) != 2 or int(minutes) > 59:
        raise ValueError(f"not a duration in h:mm: {text!r}")
    return int(whole) + int(minutes) / 60
