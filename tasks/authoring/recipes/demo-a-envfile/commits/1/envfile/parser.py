"""Parse ``.env`` files: ``KEY=value`` lines, ``export`` prefixes, quotes and comments."""

from __future__ import annotations

import re

KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_line(line: str) -> tuple[str, str] | None:
    """The key and value of one line; None for a blank or comment line."""
    line = line.strip()
    if not line or line.startswith("#"):
        return None
    if line.startswith("export "):
        line = line[len("export ") :].lstrip()
    key, eq, value = line.partition("=")
    key = key.strip()
    if not eq or not KEY.fullmatch(key):
        raise ValueError(f"expected KEY=value, got {line!r}")
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return key, value


def parse(text: str) -> dict[str, str]:
    """Every variable of a .env file, in file order; a later line wins over an earlier one."""
    values = {}
    for number, line in enumerate(text.splitlines(), start=1):
        try:
            item = parse_line(line)
        except ValueError as err:
            raise ValueError(f"line {number}: {err}") from None
        if item:
            values[item[0]] = item[1]
    return values
