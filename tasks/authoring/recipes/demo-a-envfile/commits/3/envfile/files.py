"""Load and save .env files."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from envfile.interpolate import expand
from envfile.parser import parse
from envfile.writer import dump


def load(path: str | Path, environ: Mapping[str, str] | None = None, interpolate: bool = True) -> dict[str, str]:
    """The variables of the file at ``path``, references expanded (against ``os.environ`` by default)."""
    values = parse(Path(path).read_text(encoding="utf-8"))
    if not interpolate:
        return values
    return expand(values, os.environ if environ is None else environ)


def save(path: str | Path, values: Mapping[str, str], header: str | None = None) -> None:
    """Write ``values`` to ``path`` so that ``load(path, interpolate=False)`` gives them back."""
    Path(path).write_text(dump(values, header), encoding="utf-8")
