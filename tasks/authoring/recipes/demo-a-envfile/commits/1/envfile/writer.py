"""Write ``.env`` files that ``parse()`` reads back to the same values."""

from __future__ import annotations

from collections.abc import Mapping

from envfile.parser import KEY


def format_line(key: str, value: str) -> str:
    """One ``KEY=value`` line."""
    if not KEY.fullmatch(key):
        raise ValueError(f"invalid variable name: {key!r}")
    if "\n" in value or "\r" in value:
        raise ValueError(f"{key}: a value cannot span lines")
    return f"{key}={value}"


def dump(values: Mapping[str, str], header: str | None = None) -> str:
    """The text of a .env file holding ``values``, after an optional ``#`` comment header."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()] if header else []
    lines += [format_line(key, value) for key, value in values.items()]
    return "\n".join(lines) + "\n" if lines else ""
