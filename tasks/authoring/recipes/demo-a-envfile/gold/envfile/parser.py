"""Parse ``.env`` files: ``KEY=value`` lines, ``export`` prefixes, quotes and comments."""

from __future__ import annotations

import re

KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_COMMENT = re.compile(r"(?:^|\s)#")


def parse_value(raw: str) -> str:
    """The value written as ``raw``: quotes removed (``\\``-escapes undone in double quotes), comment dropped.

    A ``#`` starts a comment only outside quotes, at the start or after whitespace.
    """
    raw = raw.strip()
    quote = raw[:1]
    if quote not in ("'", '"'):
        return _COMMENT.split(raw, 1)[0].strip()
    chars, i = [], 1
    while i < len(raw) and raw[i] != quote:
        if quote == '"' and raw[i] == "\\" and i + 1 < len(raw):
            i += 1
        chars.append(raw[i])
        i += 1
    if i == len(raw):
        raise ValueError(f"unterminated {quote} quote")
    rest = raw[i + 1 :].strip()
    if rest and not rest.startswith("#"):
        raise ValueError(f"unexpected text after the closing quote: {rest!r}")
    return "".join(chars)


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
    return key, parse_value(value)


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
