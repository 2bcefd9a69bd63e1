"""League tables from round results."""

from leaderboard.ranking import Standing, rank, top
from leaderboard.scores import Result, parse_results, totals
from leaderboard.table import render

__all__ = ["Result", "Standing", "parse_results", "rank", "render", "top", "totals"]
