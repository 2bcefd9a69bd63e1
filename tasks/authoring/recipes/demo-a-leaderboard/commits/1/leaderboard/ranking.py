"""Standings: players ranked on their points."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Standing:
    place: int
    player: str
    points: int


def rank(points: Mapping[str, int]) -> list[Standing]:
    """Standings, best first; players on equal points share a place and are listed by name.

    Places follow the usual sports-table rule: the places taken by a tie are skipped, so four
    players on 30, 20, 20 and 10 points are placed 1, 2, 2, 4.
    """
    ordered = sorted(points.items(), key=lambda item: (-item[1], item[0]))
    standings: list[Standing] = []
    for position, (player, total) in enumerate(ordered, start=1):
        if standings and standings[-1].points == total:
            place = standings[-1].place  # a tie: same place as the player above
        else:
            place = standings[-1].place + 1 if standings else 1
        standings.append(Standing(place, player, total))
    return standings


def top(standings: Sequence[Standing], n: int) -> list[Standing]:
    """The players placed in the first ``n`` places (more than ``n`` players when there are ties)."""
    return [standing for standing in standings if standing.place <= n]
