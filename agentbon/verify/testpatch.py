"""What a test patch brings in, and which listed tests therefore exist only once it is applied (the evidence rule).

Selection evidence runs before any hidden test patch, so a test the patch adds cannot be evidence: one in a
file the patch creates, or one whose function or class the patch defines (a new test, a helper renamed
``test_*``, a mixin method that every subclass, in any file, now collects). Such tests are left out of the
evidence with the reason; tests the patch only edits stay, in the form they have before it. Read from the
patch text alone (no repository): static, fast, and conservative (a name the patch defines anywhere is new
everywhere). See docs/swebench.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from agentbon.diffs import GIT_HEADER, header_paths

_DEF = re.compile(r"^[+-]\s*(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")
_DJANGO_ID = re.compile(r"^([A-Za-z_]\w*) \(([\w.]+)\)$")
_NAME = re.compile(r"[A-Za-z_]\w*")


@dataclass
class PatchFacts:
    """What a git-format patch adds: files it creates, files it changes, names it defines that it did not remove."""

    added_files: set[str] = field(default_factory=set)
    changed_files: set[str] = field(default_factory=set)
    introduced: dict[str, str] = field(default_factory=dict)
    """Function or class name → the file whose new lines define it (and whose removed lines do not)."""


def patch_facts(patch: str) -> PatchFacts:
    """Parse a git-format patch into ``PatchFacts`` (an empty patch gives empty facts)."""
    facts = PatchFacts()
    path, in_hunk = "", False
    added: dict[str, set[str]] = {}
    removed: dict[str, set[str]] = {}
    for line in patch.splitlines():
        header = header_paths(line[len(GIT_HEADER) :]) if line.startswith(GIT_HEADER) else None
        if header:
            path, in_hunk = header[1], False
            facts.changed_files.add(path)
            continue
        if not in_hunk:
            if line.startswith("new file mode") or line == "--- /dev/null":
                facts.added_files.add(path)
            in_hunk = line.startswith("@@")
            continue
        found = _DEF.match(line)
        if found:
            (added if line[0] == "+" else removed).setdefault(path, set()).add(found.group(1))
    for file, names in added.items():
        for name in sorted(names - removed.get(file, set())):
            facts.introduced.setdefault(name, file)
    return facts


def module_forms(path: str) -> set[str]:
    """How a test runner's command line may name a test file: the path, without ``.py``, dotted (Django labels)."""
    stem = path.removesuffix(".py")
    dotted = stem.replace("/", ".")
    forms = {path, stem, dotted}
    if PurePosixPath(path).parts[:1] == ("tests",):  # Django's runtests.py labels drop the leading tests/
        forms.add(dotted.removeprefix("tests."))
    return forms


def _id_parts(test_id: str) -> tuple[str | None, list[str]]:
    """The file or dotted module a test id names (None when it names none) and the identifiers in it."""
    if "::" in test_id:
        file, *rest = test_id.split("::")
        return file, [part.split("[", 1)[0] for part in rest]
    django = _DJANGO_ID.match(test_id)
    if django:
        name, dotted = django.groups()
        parts = dotted.split(".")  # module.Class, or module.Class.method (Django >= 5.0 prints both)
        cls = parts[-2] if parts[-1] == name and len(parts) > 1 else parts[-1]
        return dotted, [name, cls]
    if _NAME.fullmatch(test_id):  # SymPy: a bare test function name
        return None, [test_id]
    return None, []


def _in_file(where: str, files: set[str]) -> str | None:
    for file in sorted(files):
        if where == file or any(where == form or where.startswith(form + ".") for form in module_forms(file)):
            return file
    return None


def not_before(test_ids: list[str], patch: str, present: str = "") -> dict[str, str]:
    """The ids among ``test_ids`` that exist only once ``patch`` is applied, each with why.

    ``present`` is a patch already applied when these tests run (an agentbon task's evidence patch): what it
    creates or defines is there, so it does not count as new.
    """
    facts, have = patch_facts(patch), patch_facts(present)
    new_files = facts.added_files - have.added_files
    new_names = {n: f for n, f in facts.introduced.items() if n not in have.introduced}
    out: dict[str, str] = {}
    for test_id in test_ids:
        where, names = _id_parts(test_id)
        file = _in_file(where, new_files) if where else None
        if file:
            out[test_id] = f"in {file}, which the test patch creates"
            continue
        name = next((n for n in names if n in new_names), None)
        if name:
            out[test_id] = f"{name} is defined by the test patch (in {new_names[name]}), not before it"
    return out
