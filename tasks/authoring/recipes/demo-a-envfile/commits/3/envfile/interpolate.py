"""``${NAME}`` and ``$NAME`` references to other variables; ``$$`` stands for a dollar sign."""

from __future__ import annotations

import re
from collections.abc import Mapping

_REFERENCE = re.compile(r"\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def expand(values: Mapping[str, str], environ: Mapping[str, str] | None = None, strict: bool = False) -> dict[str, str]:
    """``values`` with references replaced, in file order.

    A reference names a variable defined above it in the file, else one from ``environ``; an unknown
    name becomes the empty string, or raises KeyError when ``strict``.
    """
    environ = {} if environ is None else environ
    done: dict[str, str] = {}

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1) or match.group(2)
        if name in done:
            return done[name]
        if name in environ:
            return environ[name]
        if strict:
            raise KeyError(f"undefined variable {name!r}")
        return ""

    for key, value in values.items():
        done[key] = _REFERENCE.sub(replace, value)
    return done
