"""Fixtures for the SWE-bench tests: the three runner families made real under ``tmp_path``, the mirror setting."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentbon.swebench import MIRROR_ENV
from tests.swebench.families import FAMILIES, Built, build


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of repositories that instances are cloned from (``AGENTBON_SWEBENCH_MIRROR=<folder>/{repo}``)."""
    root = tmp_path / "mirror"
    root.mkdir()
    monkeypatch.setenv(MIRROR_ENV, f"{root}/{{repo}}")
    return root


@pytest.fixture
def built(tmp_path: Path, mirror: Path):
    """Build one family by name (its repository goes into the mirror)."""

    def make(name: str, **options) -> Built:
        return build(FAMILIES[name], mirror, tmp_path / f"scratch-{name}", **options)

    return make
