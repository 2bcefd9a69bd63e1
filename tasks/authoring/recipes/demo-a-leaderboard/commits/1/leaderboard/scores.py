"""Round results as CSV rows: ``round,player,points`` (an optional header, ``#`` comments)."""

from __future__ import annotations

import csv
import io
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Result:
    round: int
    player: str
    points: int


def parse_results(text: str) -> list[Result]:
    """Every result in ``text``; ValueError naming the line of a malformed row."""
    results = []
    for number, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or row[0].lstrip().startswith("#"):
            continue
        if number == 1 and row[0].strip().lower() == "round":
            continue
        if len(row) != 3 or not row[1].strip():
            raise ValueError(f"line {number}: expected round,player,points")
        try:
            results.append(Result(int(row[0]), row[1].strip(), int(row[2])))
        except ValueError:
            raise ValueError(f"line {number}: round and points must be whole numbers") from None
    return results


def totals(results: Iterable[Result], upto_round: int | None = None) -> dict[str, int]:
    """Points per player over every round, or over the rounds up to ``upto_round``."""
    points: dict[str, int] = defaultdict(int)
    for result in results:
        if upto_round is None or result.round <= upto_round:
            points[result.player] += result.points
    return dict(points)
