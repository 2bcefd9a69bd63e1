"""Places gained or lost between two rounds."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from leaderboard.ranking import Standing, rank
from leaderboard.scores import Result, totals


def movement(before: Sequence[Standing], after: Sequence[Standing]) -> dict[str, int]:
    """Places gained (positive) or lost (negative) by each player who is in both tables."""
    old = {standing.player: standing.place for standing in before}
    return {s.player: old[s.player] - s.place for s in after if s.player in old}


def since_previous_round(results: Iterable[Result], round_: int) -> dict[str, int]:
    """Places gained or lost in ``round_``, for players who had played before it."""
    results = list(results)
    return movement(rank(totals(results, round_ - 1)), rank(totals(results, round_)))
