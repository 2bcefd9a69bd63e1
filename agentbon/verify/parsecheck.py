"""The parse stage: do the Python files a candidate adds or changes compile? A cheap signal, not a grade.

It runs in the verification sandbox right after the candidate applies, in the same engine call as the apply
(``script`` is appended to it), with the image's ``python3``: ``compile()`` of each added or modified ``.py``
file, nothing imported or executed. What it finds is recorded on the verdict (``Verdict.parses``,
``Verdict.parse_errors``) and never decides it: a file that does not parse may be one no test imports. The report's
frontier replays it as the first filter of a staged policy (docs/estimators.md, "Staged verification").

Not decided (``None``): no Python file changed, no ``python3`` in the image, or an output that says nothing. The
image's interpreter may be older or newer than the project's own (a SWE-bench image's conda environment): a file
valid only for another version of the language then reads as not parsing, which is why this stays a signal.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field

MARK = "agentbon-parse:"
"""Starts the one line of output the check prints: ``agentbon-parse:<files checked>:<json list of errors>``."""
MAX_ERRORS = 5
MAX_FILE_BYTES = 1_000_000
"""Larger files are not compiled: a candidate must not be able to stretch the apply step it shares."""
TIME_LIMIT_S = 20
"""The whole check is stopped after this long (``timeout``, where the image has it): what it found by then is lost
and the verdict reads undecided, never an infra error that the candidate could cause."""

_CHECK = f"""
import json, os, sys
parts = open(sys.argv[1], "rb").read().split(b"\\0")
paths = [parts[i + 1] for i in range(0, len(parts) - 1, 2) if parts[i][:1] in (b"A", b"M") and parts[i + 1].endswith(b".py")]
bad = []
for path in paths:
    name = path.decode("utf-8", "replace")
    try:
        if os.path.getsize(path) > {MAX_FILE_BYTES}:
            continue
        with open(path, "rb") as f:
            compile(f.read(), name, "exec", dont_inherit=True)
    except SyntaxError as e:
        bad.append({{"path": name, "line": e.lineno, "error": str(e.msg)[:200]}})
    except Exception:
        pass
print("{MARK}%d:%s" % (len(paths), json.dumps(bad[:{MAX_ERRORS}])))
"""


def script(changed: str) -> str:
    """A shell step that checks the files listed in ``changed`` (``git diff --name-status -z`` output) and always
    succeeds: whatever happens to the check, the verification goes on."""
    limit = f"timeout -k 1 {TIME_LIMIT_S}"
    return (
        "if command -v python3 >/dev/null 2>&1; then\n"
        f"limit=; command -v timeout >/dev/null 2>&1 && limit='{limit}'\n"
        f"$limit python3 - {shlex.quote(changed)} <<'AGENTBON_PARSE_CHECK' || true\n{_CHECK.strip()}\n"
        "AGENTBON_PARSE_CHECK\nfi"
    )


@dataclass(frozen=True)
class Parsed:
    """What the check found: ``parses`` None where it did not decide."""

    parses: bool | None = None
    errors: list[str] = field(default_factory=list)
    """``path:line: message`` for each file that does not compile (at most ``MAX_ERRORS``)."""


def read(output: str, ignore: frozenset[str] = frozenset()) -> Parsed:
    """The check's result from the command's output; files in ``ignore`` (test files the guard undoes before the
    tests run) do not count against the candidate."""
    line = next((ln for ln in reversed(output.splitlines()) if ln.startswith(MARK)), None)
    if line is None:
        return Parsed()
    checked, _, found = line[len(MARK) :].partition(":")
    try:
        count, errors = int(checked), json.loads(found)
    except ValueError:
        return Parsed()
    if count == 0 or not isinstance(errors, list):
        return Parsed()
    bad = [
        f"{e.get('path')}:{e.get('line')}: {e.get('error')}"
        for e in errors
        if isinstance(e, dict) and e.get("path") not in ignore
    ]
    return Parsed(parses=not bad, errors=bad)
