"""Rates written as strings: ``"5/min"``, ``"100/hour"``, ``"2/10s"``, ``"1/1.5h"``."""

from __future__ import annotations

import re
from dataclasses import dataclass

_NAMES = {1: ("s", "sec", "second"), 60: ("m", "min", "minute"), 3600: ("h", "hour"), 86400: ("d", "day")}
UNITS = {name: seconds for seconds, names in _NAMES.items() for name in names}
"""Seconds per time unit, by every name the unit goes by."""
_RATE = re.compile(r"(\d+)\s*/\s*(\d+(?:\.\d+)?)?\s*([a-z]+)")


@dataclass(frozen=True)
class Rate:
    limit: int
    period: float
    """Seconds."""


def parse_rate(text: str) -> Rate:
    """The rate a string like ``"5/min"`` or ``"2/10s"`` stands for; ValueError when it is not one."""
    match = _RATE.fullmatch(text.strip().lower())
    if not match:
        raise ValueError(f"not a rate: {text!r} (expected e.g. '5/min' or '2/10s')")
    count, amount, unit = match.groups()
    if unit not in UNITS and unit.endswith("s"):
        unit = unit[:-1]  # plurals: "10/hours"
    if unit not in UNITS:
        raise ValueError(f"unknown time unit {unit!r} in {text!r}")
    limit, period = int(count), float(amount or 1) * UNITS[unit]
    if limit < 1 or period <= 0:
        raise ValueError(f"a rate needs at least one request per positive period: {text!r}")
    return Rate(limit, period)
