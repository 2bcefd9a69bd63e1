"""Options that several commands share (``run``, ``eval``): declared once, so their flags and help agree."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

CLUSTER, CONFIG, OUTPUT = "Cluster", "Config", "Output"
"""Help panels."""

ConfigFiles = Annotated[
    list[Path] | None, typer.Option("-f", "--config", help="YAML config file (repeatable; later wins).", rich_help_panel=CONFIG)
]
Overrides = Annotated[
    list[str] | None, typer.Option("-c", help="Override a setting: -c key.sub=value (repeatable).", rich_help_panel=CONFIG)
]
RayAddress = Annotated[
    str | None, typer.Option(help="Join this Ray cluster (host:port or auto); default: a local Ray.", rich_help_panel=CLUSTER)
]
RunDir = Annotated[Path | None, typer.Option(help="Where run directories live.", rich_help_panel=OUTPUT)]
