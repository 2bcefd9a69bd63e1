"""The league table as text, for the weekly email."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from leaderboard.ranking import Standing


def place_label(place: int, tied: bool) -> str:
    """``" 3."``, or ``"=3."`` for a shared place."""
    return f"{'=' if tied else ' '}{place}."


def render(standings: Sequence[Standing]) -> str:
    """One line per player: place, name, points; names padded to line up."""
    if not standings:
        return "(no results yet)\n"
    shared = Counter(standing.place for standing in standings)
    label_width = len(str(len(standings))) + 2
    width = max(len(standing.player) for standing in standings)
    lines = [
        f"{place_label(s.place, shared[s.place] > 1):>{label_width}} {s.player:<{width}}  {s.points}" for s in standings
    ]
    return "\n".join(lines) + "\n"
