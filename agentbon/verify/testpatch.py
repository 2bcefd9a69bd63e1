"""What a test patch brings in, and which listed tests therefore exist only once it is applied (the evidence rule).

Selection evidence runs before any hidden test patch, so a test the patch adds cannot be evidence: one in a
file the patch creates, or one whose function or class the patch defines (a new test, a helper renamed
``test_*``, a mixin method that every subclass, in any file, now collects). Such tests are left out of the
evidence with the reason; tests the patch only edits stay, in the form they have before it. Read from the
patch text alone (no repository): static, fast, and conservative (a name the patch defines anywhere is new
everywhere), except that a method added to a collected test class is keyed by its full node id: a test of the same
name in another class of that file is an older, different test. See docs/swebench.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from agentbon.diffs import GIT_HEADER, header_paths

_DEF = re.compile(r"^[+-]\s*(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")
_DJANGO_ID = re.compile(r"^([A-Za-z_]\w*) \(([\w.]+)\)$")
_NAME = re.compile(r"[A-Za-z_]\w*")
_CLASS = re.compile(r"^(\s*)class\s+([A-Za-z_]\w*)\s*(\([^)]*\))?")
_HUNK_CONTEXT = re.compile(r"^@@[^@]*@@\s?(.*)$")


@dataclass
class PatchFacts:
    """What a git-format patch adds: files it creates, files it changes, names it defines that it did not remove."""

    added_files: set[str] = field(default_factory=set)
    changed_files: set[str] = field(default_factory=set)
    introduced: dict[str, str] = field(default_factory=dict)
    """Function or class name → the file whose new lines define it (and whose removed lines do not)."""
    test_class_methods: dict[str, set[str]] = field(default_factory=dict)
    """Introduced name → the collected test classes (``Test*``, or a ``TestCase`` subclass) it is a method of, where
    every new definition of it is such a method: then it is new only in those classes (and in classes the patch shows
    deriving from them), not in every class of the suite that has a test of the same name."""
    bases: dict[str, str] = field(default_factory=dict)
    """``file::Class`` → the base list the patch shows for that class (new side)."""


def patch_facts(patch: str) -> PatchFacts:
    """Parse a git-format patch into ``PatchFacts`` (an empty patch gives empty facts)."""
    facts = PatchFacts()
    path, in_hunk = "", False
    added: dict[str, set[str]] = {}
    removed: dict[str, set[str]] = {}
    classes: list[tuple[int, str]] = []  # the new side's enclosing classes at this line: (indent, name)
    owners: dict[tuple[str, str], set[str | None]] = {}  # (file, added name) → its test class, None if not one
    for line in patch.splitlines():
        header = header_paths(line[len(GIT_HEADER) :]) if line.startswith(GIT_HEADER) else None
        if header:
            path, in_hunk = header[1], False
            facts.changed_files.add(path)
            continue
        if line.startswith("@@ "):
            in_hunk, classes = True, []
            context = _HUNK_CONTEXT.match(line)
            shown = _CLASS.match(context.group(1)) if context else None
            if shown:  # git names the class the hunk is in
                classes = [(-1, _note_class(facts, path, shown))]
            elif context and context.group(1).strip():
                classes = [(-1, "")]  # inside something unknown: no class can be named
            continue
        if not in_hunk:
            if line.startswith("new file mode") or line == "--- /dev/null":
                facts.added_files.add(path)
            continue
        text = line[1:]
        indent = len(text) - len(text.lstrip())
        if line[:1] != "-" and text.strip():
            classes = [c for c in classes if c[0] < indent]
            shown = _CLASS.match(text)
            if shown:
                classes.append((indent, _note_class(facts, path, shown)))
        found = _DEF.match(line)
        if found:
            (added if line[0] == "+" else removed).setdefault(path, set()).add(found.group(1))
            if line[0] == "+":
                outer = [c for c in classes if c[0] < indent]
                owner = outer[-1][1] if outer and indent > 0 else ""
                collected = owner.startswith("Test") or "TestCase" in facts.bases.get(f"{path}::{owner}", "")
                owners.setdefault((path, found.group(1)), set()).add(owner if owner and collected else None)
    for file, names in added.items():
        for name in sorted(names - removed.get(file, set())):
            if name in facts.introduced:  # defined in two files: new everywhere
                facts.test_class_methods.pop(name, None)
                continue
            facts.introduced[name] = file
            in_classes = owners.get((file, name), {None})
            if None not in in_classes:
                facts.test_class_methods[name] = {c for c in in_classes if c}
    return facts


def _note_class(facts: PatchFacts, path: str, shown: re.Match[str]) -> str:
    facts.bases[f"{path}::{shown.group(2)}"] = shown.group(3) or ""
    return shown.group(2)


def _another_class(test_id: str, name: str, facts: PatchFacts) -> bool:
    """Whether pytest id ``test_id`` is a test ``name`` of a class other than those the patch gives a new ``name`` (and
    not shown deriving from them): an older test of the same name, which exists before the patch."""
    if "::" not in test_id or name not in facts.test_class_methods:
        return False
    where, *rest = test_id.split("::")
    parts = [p.split("[", 1)[0] for p in rest]
    if len(parts) < 2 or parts[-1] != name or where != facts.introduced[name]:
        return False
    owners, cls = facts.test_class_methods[name], parts[-2]
    bases = facts.bases.get(f"{where}::{cls}", "")
    return cls not in owners and cls not in facts.introduced and not any(re.search(rf"\b{o}\b", bases) for o in owners)


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
        name = next((n for n in names if n in new_names and not _another_class(test_id, n, facts)), None)
        if name:
            out[test_id] = f"{name} is defined by the test patch (in {new_names[name]}), not before it"
    return out
