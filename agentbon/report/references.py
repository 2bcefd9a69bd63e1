"""Published best-of-N figures on SWE-bench Verified: external references, not this run."""

from __future__ import annotations

from agentbon.report.schema import Reference, References

REFERENCES: list[Reference] = [
    Reference(
        name="SWE-Gym (learned verifier)",
        benchmark="SWE-bench Verified",
        n=16,
        pass_at_1=0.206,
        coverage=0.428,
        selected=0.320,
        selection_loss=0.108,
        points_per_doubling=3.1,
    ),
    Reference(
        name="CodeMonkeys",
        benchmark="SWE-bench Verified",
        n=10,
        pass_at_1=None,
        coverage=0.698,
        selected=0.574,
        selection_loss=0.124,
        points_per_doubling=None,
    ),
    Reference(
        name="DeepSWE",
        benchmark="SWE-bench Verified",
        n=16,
        pass_at_1=0.422,
        coverage=0.710,
        selected=0.590,
        selection_loss=0.120,
        points_per_doubling=None,
    ),
]
"""Each entry: accuracy fractions at ``n`` samples as published; None where the source gives no figure."""

LABEL = "External references (published, SWE-bench Verified) — not measured by this run"


def references_section() -> References:
    """The ``references`` part of ``summary.json``."""
    return References(label=LABEL, entries=REFERENCES)
