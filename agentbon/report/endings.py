"""The report's ``endings``: finished rollouts that ended on a reply their agent could not use, counted per cause."""

from __future__ import annotations

from collections import Counter
from typing import get_args

from agentbon.report import schema
from agentbon.report.data import RunData
from agentbon.types import UnusableCause

UNRECORDED = "unrecorded"
"""The cause of a ``format_error`` rollout whose record (version 1) kept none."""


def endings_section(data: RunData) -> schema.Endings:
    """Each finished rollout's ``unusable`` cause (a ``format_error`` one without a cause: ``unrecorded``), counted;
    causes in the order ``UnusableCause`` lists them."""
    finished = [r for r in data.rollouts.values() if r.finished]
    causes = Counter(r.unusable or UNRECORDED for r in finished if r.unusable is not None or r.status == "format_error")
    order = [*get_args(UnusableCause), UNRECORDED]
    unusable = sum(causes.values())
    return schema.Endings(
        finished=len(finished),
        unusable=unusable,
        rate=round(unusable / len(finished), 6) if finished else None,
        by_cause={cause: causes[cause] for cause in order if causes[cause]},
    )
