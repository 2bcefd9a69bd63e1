"""Published best-of-N figures on SWE-bench Verified: external references, not this run."""

from __future__ import annotations

from agentbon.report.schema import Reference, References

REFERENCES: list[Reference] = [
    Reference(name=name, benchmark="SWE-bench Verified", n=n, pass_at_1=pass_at_1, coverage=coverage,
              selected=selected, selection_loss=loss, points_per_doubling=per_doubling)
    for name, n, pass_at_1, coverage, selected, loss, per_doubling in [
        ("SWE-Gym (learned verifier)", 16, 0.206, 0.428, 0.320, 0.108, 3.1),
        ("CodeMonkeys", 10, None, 0.698, 0.574, 0.124, None),
        ("DeepSWE", 16, 0.422, 0.710, 0.590, 0.120, None),
    ]
]  # fmt: skip
"""Each entry: accuracy fractions at ``n`` samples as published (name, N, pass@1, coverage, selected, selection loss,
points per doubling); None where the source gives no figure."""

LABEL = "External references (published, SWE-bench Verified) — not measured by this run"


def references_section() -> References:
    """The ``references`` part of ``summary.json``."""
    return References(label=LABEL, entries=REFERENCES)
