"""Helpers shared by the SWE-bench tests."""

from __future__ import annotations

import pytest


def harness_or_skip():
    """The ``swebench`` package's grading module, or skip (the ``swebench`` extra is not installed)."""
    return pytest.importorskip("swebench.harness.grading", reason="the swebench extra is not installed")
