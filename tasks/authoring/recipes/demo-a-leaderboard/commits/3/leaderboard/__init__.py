"""League tables from round results."""

from leaderboard.movement import movement, since_previous_round
from leaderboard.ranking import Standing, rank, top
from leaderboard.scores import Result, parse_results, totals
from leaderboard.table import render

__all__ = [
    "Result",
    "Standing",
    "movement",
    "parse_results",
    "rank",
    "render",
    "since_previous_round",
    "top",
    "totals",
]
