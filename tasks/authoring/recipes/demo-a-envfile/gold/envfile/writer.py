"""Write ``.env`` files that ``parse()`` reads back to the same values."""

from __future__ import annotations

import re
from collections.abc import Mapping

from envfile.parser import KEY

_BARE = re.compile(r"[A-Za-z0-9_./:@,+=%?&~-]*")
"""Values written as they are: nothing in them that parse() would read as a quote, comment or space."""


def format_value(value: str) -> str:
    """``value`` as written after ``=``: bare when that reads back the same, else double-quoted and escaped."""
    if _BARE.fullmatch(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_line(key: str, value: str) -> str:
    """One ``KEY=value`` line."""
    if not KEY.fullmatch(key):
        raise ValueError(f"invalid variable name: {key!r}")
    if "\n" in value or "\r" in value:
        raise ValueError(f"{key}: a value cannot span lines")
    return f"{key}={format_value(value)}"


def dump(values: Mapping[str, str], header: str | None = None) -> str:
    """The text of a .env file holding ``values``, after an optional ``#`` comment header."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()] if header else []
    lines += [format_line(key, value) for key, value in values.items()]
    return "\n".join(lines) + "\n" if lines else ""
