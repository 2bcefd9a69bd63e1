"""Rebuild ``tasks/real``: tasks from released source distributions of public Python libraries (tasks/real/README.md).

No git hosting is needed: each library's sdists come from PyPI (``pip download --no-binary :all:``) and become a
small git repository, and agentbon's own authoring commands turn that into tasks.

- **Bug fixes**: release X is the base commit; the fix commit is release Y's version of the files that hold the
  fix and its test (the rest of Y's changes, and the version bump, left out); ``agentbon tasks from-commit``
  splits it, finds FAIL_TO_PASS / PASS_TO_PASS in sandboxes and writes the task, with the problem statement
  written here from the user's side of the bug (the release notes' wording, not the fix).
- **Migrations**: one release per library whose code imports a standard-library module deprecated since
  Python 3.11 (removed in 3.13); ``agentbon tasks migration`` with one instruction for all and an acceptance
  command: every module outside the tests imports with DeprecationWarning as an error.

Usage (Docker and PyPI reachable): ``python tasks/real/build.py [--out tasks/real] [--work DIR]``, then
``agentbon tasks validate tasks/real``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
GIT = ["git", "-c", "user.name=agentbon", "-c", "user.email=agentbon@localhost", "-c", "commit.gpgsign=false"]
DATE = {"GIT_AUTHOR_DATE": "2026-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2026-01-01T00:00:00+0000"}


@dataclass(frozen=True)
class Fix:
    package: str
    base: str
    fixed: str
    files: tuple[str, ...]
    """Release ``fixed``'s files taken into the fix commit: the code fix and its test."""
    problem: str


@dataclass(frozen=True)
class Old:
    package: str
    version: str
    reference: str = ""
    """A later release whose version of ``files`` is the reference solution (``gold.patch``, validation only)."""
    files: tuple[str, ...] = ()
    edits: tuple[tuple[str, str, str], ...] = ()
    """Or the reference solution as ``(file, old text, new text)`` edits, where no release has one."""


FIXES = [
    Fix("parse", "1.21.0", "1.21.1", ("parse.py", "tests/test_bugs.py"),
        "Fractional seconds lose precision when parsed: `parse.parse('{:ti}', '2023-10-14T15:09:08.501902Z')[0]` "
        "has microsecond 501901, not 501902 (the fraction goes through a float). The digits in the text should be "
        "kept exactly: fewer than six digits padded (`.1` is 100000 microseconds), more than six truncated."),
    Fix("parse", "1.22.2", "1.22.3", ("parse/__init__.py", "tests/test_parse.py"),
        "A time parsed with a UTC offset loses the offset: `parse.parse('{:%H:%M:%S%z}', '12:34:56+0530')` gives "
        "a naive `datetime.time` (tzinfo None), while `datetime.strptime(text, '%H:%M:%S%z').timetz()` keeps "
        "+05:30. The parsed time should keep its tzinfo; a time parsed without an offset stays naive."),
    Fix("python-slugify", "9.1.0", "9.1.1", ("slugify/slugify.py", "tests/test_release.py"),
        "With `replacement_stage='post'`, `max_length` does not hold for the slug as returned: "
        "`slugify('value', replacements=[('value', 'one--two')], replacement_stage='post', allow_unicode=True, "
        "separator='::', max_length=6)` returns 'one::::t' (8 characters), and with `replacements=[('value', "
        "'--one')]` and `max_length=3` it returns 'one' instead of '--o'. The returned slug should be cut hard at "
        "`max_length`, without ending in delimiters (expected 'one' for the first call), and with "
        "`word_boundary=True` delimiters stay with the word that follows them."),
    Fix("humanize", "4.12.2", "4.12.3", ("src/humanize/filesize.py", "tests/test_filesize.py"),
        "`naturalsize(1.0)` and `naturalsize('1')` return '1.0 Byte', while `naturalsize(1)` returns '1 Byte'. "
        "One byte given as a float or a string should read '1 Byte' too."),
    Fix("sqlparse", "0.5.1", "0.5.2", ("sqlparse/filters/others.py", "tests/test_format.py"),
        "`sqlparse.format(sql, strip_comments=True)` also strips optimizer hints, comments the database reads: "
        "`select --+full(u)`, `#+ hint`, `SELECT /*+cluster(T)*/* FROM T_EEE T` and `insert /*+ DIRECT */ into ...` "
        "lose their hints. Stripping comments must keep hints and still remove ordinary comments."),
    Fix("croniter", "6.2.0", "6.2.1", ("src/croniter/croniter.py", "src/croniter/tests/test_croniter.py"),
        "`croniter('0 0 29 * *', datetime(2024, 3, 15)).get_prev(datetime)` skips February 29, 2024 (a leap year) "
        "and returns January 29. get_prev must not skip Feb 29 in leap years, and from January it should still cross "
        "into December of the previous year."),
    Fix("croniter", "6.2.3", "6.2.4", ("src/croniter/croniter.py", "src/croniter/tests/test_croniter.py"),
        "With `expand_from_start_time=True`, a day-of-week step such as `0 0 * * */2` started on a Sunday drops "
        "Sunday from the schedule: the phase is computed as if Sunday were day 7, so "
        "`croniter('0 0 * * */2', start_time=datetime(2024, 7, 14), expand_from_start_time=True).get_next(datetime)` "
        "is not 2024-07-16 and the schedule never fires on Sundays."),
]  # fmt: skip

MIGRATION = "stdlib-deprecations"
INSTRUCTION = """\
Python 3.13 removes standard-library modules that were deprecated in Python 3.11 (`cgi`, `imp`, `sre_parse`,
`sre_constants`, `sre_compile`, `pipes`, `imghdr`, ...), and importing them already emits a DeprecationWarning.
Make this library stop using them: replace each use with its supported equivalent (for example
`email.message.Message` for `cgi.parse_header`, `re._parser`/`re._constants` where they exist, with a fallback
for older Pythons), keeping the library's behaviour and public API. The existing test suite must still pass,
and the package must import without a DeprecationWarning.
"""
ACCEPTANCE = (
    "python3 -W error::DeprecationWarning -c \"import importlib, pkgutil; "
    "names = [m.name for m in pkgutil.walk_packages(['.']) if not any(p.startswith(('test', 'setup', 'conftest')) "
    "or p.endswith('_test') for p in m.name.split('.'))]; [importlib.import_module(n) for n in names]\""
)
"""Every module of the repository outside its tests imports with DeprecationWarning as an error (an old Python's
fallback import inside ``try``/``except ImportError`` is fine)."""
_RE_INTERNALS = "try:\n    import re._constants as sre_constants\n    import re._parser as sre_parse\nexcept ImportError:  # Python < 3.11\n    import sre_constants\n    import sre_parse\n"
OLD = [
    Old("python-mimeparse", "1.6.0", reference="2.0.0", files=("mimeparse.py",)),
    Old("rstr", "3.1.0", edits=(("rstr/xeger.py", "import sre_parse\n", "try:\n    import re._parser as sre_parse\n"
                                 "except ImportError:  # Python < 3.11\n    import sre_parse\n"),)),
    Old("sre-yield", "1.2", edits=(("sre_yield/__init__.py", "import sre_constants\nimport sre_parse\n", _RE_INTERNALS),)),
]  # fmt: skip


def run(argv: list[str], cwd: Path | None = None) -> None:
    print("+", " ".join(argv), flush=True)
    subprocess.run(argv, cwd=cwd, check=True, env={**os.environ, **DATE})


def sdist(package: str, version: str, cache: Path) -> Path:
    """The released source distribution, unpacked (downloaded once into ``cache``)."""
    unpacked = cache / f"{package}-{version}"
    if unpacked.is_dir():
        return unpacked
    with tempfile.TemporaryDirectory() as tmp:
        run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             f"{package}=={version}", "-d", tmp])  # fmt: skip
        (archive,) = Path(tmp).iterdir()
        into = Path(tmp) / "x"
        if archive.suffix == ".zip":
            zipfile.ZipFile(archive).extractall(into)
        else:
            with tarfile.open(archive) as tar:
                tar.extractall(into, filter="data")
        (top,) = into.iterdir()
        shutil.move(str(top), unpacked)
    return unpacked


def repository(source: Path, where: Path) -> Path:
    """A git repository whose one commit is the release as published."""
    shutil.copytree(source, where, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    run(["git", "init", "-q", "-b", "main"], where)
    run([*GIT, "add", "-A"], where)
    run([*GIT, "commit", "-q", "-m", f"{source.name} as released on PyPI"], where)
    return where


def fix_commit(repo: Path, fixed: Path, fix: Fix) -> str:
    """Release ``fixed``'s files of the fix on top of the base, the version string kept at the base's."""
    for name in fix.files:
        text = (fixed / name).read_text(encoding="utf-8")
        lines = [
            line.replace(fix.fixed, fix.base) if "version" in line.lower() else line for line in text.splitlines(True)
        ]
        (repo / name).write_text("".join(lines), encoding="utf-8")
    run([*GIT, "add", "-A"], repo)
    run([*GIT, "commit", "-q", "-m", f"Fix from {fix.package} {fix.fixed}"], repo)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True).stdout


def reference_patch(repo: Path, old: Old, cache: Path) -> str:
    """The migration's reference solution as a diff against the base (the working tree is restored after)."""
    if old.reference:
        later = sdist(old.package, old.reference, cache)
        for name in old.files:
            lines = (later / name).read_text(encoding="utf-8").splitlines(True)
            kept = [line.replace(old.reference, old.version) if "version" in line.lower() else line for line in lines]
            (repo / name).write_text("".join(kept), encoding="utf-8")
    for name, before, after in old.edits:
        text = (repo / name).read_text(encoding="utf-8")
        assert before in text, f"{old.package}: {name} does not contain {before!r}"
        (repo / name).write_text(text.replace(before, after, 1), encoding="utf-8")
    diff = subprocess.run(["git", "diff"], cwd=repo, check=True, capture_output=True, text=True).stdout
    run(["git", "checkout", "-q", "--", "."], repo)
    return diff


def provenance(task: Path, package: str, version: str) -> None:
    """``metadata.source``: the release on PyPI the repository was made from (not this machine's scratch path)."""
    spec = task / "task.yaml"
    lines = spec.read_text(encoding="utf-8").splitlines(True)
    url = f"https://pypi.org/project/{package}/{version}/"
    spec.write_text("".join(f"  source: {url}\n" if line.startswith("  source: ") else line for line in lines))


def add_gold(task: Path, patch: str) -> None:
    """``gold.patch`` in a task folder the migration command wrote (it writes none: a migration has no fix commit)."""
    (task / "gold.patch").write_text(patch, encoding="utf-8")
    spec = task / "task.yaml"
    text = spec.read_text(encoding="utf-8")
    if "gold_patch_file:" not in text:
        spec.write_text(text.rstrip("\n") + "\ngold_patch_file: gold.patch\n", encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE)
    parser.add_argument("--work", type=Path, default=None, help="Where sdists and repositories go (default: temp).")
    parser.add_argument("--only", nargs="*", default=None, help="Task ids (or 'migration') to build; default all.")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="agentbon-real-"))
    cache, repos = work / "sdists", work / "repos"
    cache.mkdir(parents=True, exist_ok=True)
    repos.mkdir(parents=True, exist_ok=True)
    agentbon = [sys.executable, "-m", "agentbon", "tasks"]
    refused = 0
    for fix in FIXES:
        task_id = f"{fix.package}-{fix.fixed}"
        if args.only is not None and task_id not in args.only:
            continue
        repo = repos / task_id
        shutil.rmtree(repo, ignore_errors=True)
        repository(sdist(fix.package, fix.base, cache), repo)
        sha = fix_commit(repo, sdist(fix.package, fix.fixed, cache), fix).strip()
        problem = work / f"{task_id}.md"
        problem.write_text(fix.problem + "\n", encoding="utf-8")
        done = subprocess.run([*agentbon, "from-commit", str(repo), sha, "--task-id", task_id, "--problem",
                               str(problem), "--out", str(args.out)], env={**os.environ, **DATE})  # fmt: skip
        refused += done.returncode != 0
        if (args.out / task_id).is_dir():
            provenance(args.out / task_id, fix.package, fix.base)
    if args.only is None or "migration" in args.only:
        listing = work / "migration.txt"
        lines = []
        for old in OLD:
            repo = repos / f"{old.package}-{old.version}"
            shutil.rmtree(repo, ignore_errors=True)
            repository(sdist(old.package, old.version, cache), repo)
            lines.append(f"{repo}\n")
        listing.write_text("".join(lines), encoding="utf-8")
        instruction = work / f"{MIGRATION}.md"
        instruction.write_text(INSTRUCTION, encoding="utf-8")
        done = subprocess.run([*agentbon, "migration", str(listing), "--instruction", str(instruction),
                               "--acceptance", ACCEPTANCE, "--out", str(args.out)])  # fmt: skip
        refused += done.returncode != 0
        for old in OLD:
            task = args.out / f"{MIGRATION}-{old.package}-{old.version}"
            if task.is_dir():
                add_gold(task, reference_patch(repos / f"{old.package}-{old.version}", old, cache))
                provenance(task, old.package, old.version)
    return 1 if refused else 0


if __name__ == "__main__":
    raise SystemExit(main())
