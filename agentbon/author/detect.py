"""A Python project's test environment, read from what the repository declares (task authoring).

Read at the base commit, in this order, each adding what it names (duplicates once, first spelling kept):

- ``pyproject.toml``: ``[project] dependencies``, the ``[project.optional-dependencies]`` and PEP 735
  ``[dependency-groups]`` named ``test``, ``tests``, ``testing`` or ``dev``;
- ``setup.cfg``: ``[options] install_requires`` and ``[options.extras_require]`` of those names;
- ``requirements.txt`` and the test/dev requirement files (``requirements-test.txt``, ``test-requirements.txt``,
  ``requirements-dev.txt``, ``requirements/test.txt``, ...), following ``-r`` includes inside the repository;
- ``tox.ini``: ``[testenv] deps``, and ``setenv`` as the tests' environment variables (literal values only).

A project that cannot be installed but keeps its packages under ``src/`` gets ``PYTHONPATH=src``. Options in
pytest's ``addopts`` (``pyproject.toml``, ``pytest.ini``, ``setup.cfg``, ``tox.ini``) that belong to a plugin
(``--cov`` → ``pytest-cov``, ``-n`` → ``pytest-xdist``, ...) add that plugin: without it pytest refuses to start.

A project that can be installed (``pyproject.toml`` with a build system, ``setup.py`` or ``setup.cfg``) also gets
``pip``, ``setuptools`` and ``wheel`` upgraded first (Debian's setuptools rejects current metadata such as
PEP 639 licence fields) and itself installed in editable mode, without dependencies (they are the list above), so
that a ``src/`` layout imports. Lines pip cannot take from a list (``-e``, ``--hash`` options, local paths, the
project itself) are left out, each with a note. The guesses are fields of ``environment``; give them yourself to
override (``--package``, ``--setup``, ``--no-detect``). Installing needs the package index at image build time
only; the sandboxes never need the network.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from agentbon.author.imports import used_by_tests
from agentbon.types import RUNNER_ENV

GROUPS = ("test", "tests", "testing", "dev")
REQUIREMENT_FILES = (
    "requirements.txt", "requirements-test.txt", "requirements_test.txt", "test-requirements.txt",
    "test_requirements.txt", "requirements-tests.txt", "requirements-dev.txt", "requirements_dev.txt",
    "dev-requirements.txt", "requirements/test.txt", "requirements/tests.txt", "requirements/dev.txt",
    "requirements/testing.txt",
)  # fmt: skip
UPGRADE = ["pip", "setuptools>=77", "wheel"]
ADDOPTS_PLUGINS = {
    "--cov": "pytest-cov", "--no-cov": "pytest-cov", "-n": "pytest-xdist", "--numprocesses": "pytest-xdist",
    "--dist": "pytest-xdist", "--timeout": "pytest-timeout", "--benchmark-": "pytest-benchmark",
    "--reruns": "pytest-rerunfailures", "--mypy": "pytest-mypy", "--flake8": "pytest-flake8",
    "--asyncio-mode": "pytest-asyncio", "--randomly-": "pytest-randomly", "-p xdist": "pytest-xdist",
    "--html": "pytest-html", "--mpl": "pytest-mpl",
}  # fmt: skip
"""pytest options that only a plugin defines, and the plugin's requirement."""
INSTALL_SELF = "python3 -m pip install --no-cache-dir --no-deps -e ."
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_ENV = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOX_FACTOR = re.compile(r"^!?[\w.-]+(?:[,-]!?[\w.-]+)*:\s")  # "py311,unidecode: dep": conditional on factors


@dataclass
class Detected:
    """What the repository declares: pip requirements, set-up commands, and notes on what was read or left out."""

    python_packages: list[str] = field(default_factory=list)
    setup: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    project: str | None = None
    """The project's own distribution name (normalised), where it declares one."""
    optional: dict[str, str] = field(default_factory=dict)
    """Requirements of test and dev lists (not the project's runtime ones), each with where it was read."""


def _name(requirement: str) -> str:
    """The requirement's distribution name, normalised (PEP 503: ``Foo_Bar.baz`` is ``foo-bar-baz``)."""
    found = _NAME.match(requirement)
    return re.sub(r"[-_.]+", "-", found.group(1)).lower() if found else requirement


def _add(out: Detected, requirements: list[str], where: str, project: str | None, runtime: bool = False) -> None:
    """Add each requirement pip can take from a list, once by name; one that is not ``runtime`` (a test or dev list)
    stays only if the tests use it (``_leave_out_unused``)."""
    names = {_name(r) for r in out.python_packages}
    for raw in requirements:
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-", "/", ".")) or "://" in line and "@" not in line:
            out.notes.append(f"{where}: left out {line!r} (not a requirement pip takes from a list)")
            continue
        if project and _name(line) == project:
            continue  # the project itself: installed from the repository
        if _name(line) not in names:
            names.add(_name(line))
            out.python_packages.append(line)
            if not runtime:
                out.optional[line] = where
        elif runtime:  # read from a test list first (pyproject's extras come before requirements.txt): runtime all the same
            out.optional = {r: w for r, w in out.optional.items() if _name(r) != _name(line)}


def _requirements_file(
    root: Path, rel: str, out: Detected, project: str | None, seen: set[str], runtime: bool = False
) -> None:
    path = (root / rel).resolve()
    if rel in seen or not path.is_file() or root.resolve() not in path.parents:
        return
    seen.add(rel)
    lines = []
    for raw in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = raw.strip()
        if line.startswith(("-r ", "--requirement ")):
            include = str((Path(rel).parent / line.split(None, 1)[1].strip()).as_posix())
            _requirements_file(root, include, out, project, seen, runtime)
        elif line.startswith(("-c ", "--constraint ")):
            continue
        else:
            lines.append(line)
    _add(out, lines, rel, project, runtime)


def _group(groups: dict, name: str, seen: set[str]) -> list[str]:
    """A PEP 735 dependency group's requirements, its ``{include-group = ...}`` entries followed (once each)."""
    if name in seen:
        return []
    seen.add(name)
    out: list[str] = []
    for entry in groups.get(name) or []:
        if isinstance(entry, str):
            out.append(entry)
        elif isinstance(entry, dict) and isinstance(entry.get("include-group"), str):
            out += _group(groups, entry["include-group"], seen)
    return out


def detect(root: Path) -> Detected:
    """The environment the repository at ``root`` declares for its tests (module docstring)."""
    out = Detected()
    project: str | None = None
    installable = (root / "setup.py").is_file() or (root / "setup.cfg").is_file()
    pyproject = root / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            out.notes.append(f"pyproject.toml: not read ({e})")
            data = {}
        meta = data.get("project") or {}
        project = _name(str(meta["name"])) if meta.get("name") else None
        installable = installable or "build-system" in data or bool(meta)
        _add(out, list(meta.get("dependencies") or []), "pyproject.toml [project]", project, runtime=True)
        extras = meta.get("optional-dependencies") or {}
        groups = data.get("dependency-groups") or {}
        for group in GROUPS:
            _add(out, list(extras.get(group) or []), f"pyproject.toml extra {group!r}", project)
            _add(out, _group(groups, group, set()), f"dependency group {group!r}", project)
    setup_cfg = root / "setup.cfg"
    if setup_cfg.is_file():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(setup_cfg.read_text(encoding="utf-8"))
        except (configparser.Error, UnicodeDecodeError) as e:
            out.notes.append(f"setup.cfg: not read ({e})")
        else:
            project = project or (
                _name(parser.get("metadata", "name")) if parser.has_option("metadata", "name") else None
            )
            requires = parser.get("options", "install_requires", fallback="").splitlines()
            _add(out, requires, "setup.cfg", project, runtime=True)
            for group in GROUPS:
                _add(
                    out,
                    parser.get("options.extras_require", group, fallback="").splitlines(),
                    f"setup.cfg {group}",
                    project,
                )
    seen: set[str] = set()
    for rel in REQUIREMENT_FILES:
        _requirements_file(root, rel, out, project, seen, runtime=rel == "requirements.txt")
    tox = root / "tox.ini"
    if tox.is_file():
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(tox.read_text(encoding="utf-8"))
            deps = parser.get("testenv", "deps", fallback="").splitlines()
            setenv = parser.get("testenv", "setenv", fallback="").splitlines()
        except (configparser.Error, UnicodeDecodeError) as e:
            out.notes.append(f"tox.ini: not read ({e})")
            deps, setenv = [], []
        _setenv(out, setenv)
        for dep in deps:
            dep = dep.strip()
            if dep.startswith("-r"):
                _requirements_file(root, dep[2:].strip().replace("{toxinidir}/", ""), out, project, seen)
            elif _TOX_FACTOR.match(dep):
                out.notes.append(f"tox.ini: left out {dep!r} (only for the tox environments it names)")
            elif "{" not in dep:
                _add(out, [dep], "tox.ini", project)
    _add(out, _addopts_plugins(root), "pytest addopts", project, runtime=True)
    _leave_out_unused(root, out)
    out.project = project
    if installable:
        out.python_packages = [*UPGRADE, *out.python_packages]
        out.setup.append(INSTALL_SELF)
        out.notes.append("installable project: pip, setuptools and wheel upgraded, the project installed editable")
    elif "PYTHONPATH" not in out.env and any((root / "src").glob("*/__init__.py")):
        out.env["PYTHONPATH"] = "src"
        out.notes.append("src/ layout of a project that is not installed: PYTHONPATH=src")
    return out


IMPORT_NAMES = {
    "beautifulsoup4": {"bs4"}, "pillow": {"pil"}, "scikit-learn": {"sklearn"}, "scikit-image": {"skimage"},
    "opencv-python": {"cv2"}, "opencv-python-headless": {"cv2"}, "attrs": {"attr"}, "protobuf": {"google"},
    "pycryptodome": {"crypto"}, "pycryptodomex": {"cryptodome"}, "dnspython": {"dns"}, "pyyaml": {"yaml"},
    "setuptools": {"pkg_resources", "distutils"}, "tzdata": {"zoneinfo"}, "pywin32": {"win32api", "win32con"},
    "python-dateutil": {"dateutil"}, "mock": {"mock"}, "faker": {"faker"}, "pyhamcrest": {"hamcrest"},
}  # fmt: skip
"""Distributions whose import name their own does not give (``tzdata``: the data ``zoneinfo`` reads)."""


def import_names(requirement: str) -> set[str]:
    """The names (lower case) a requirement may be imported or asked for as a fixture by: its normalised name with
    underscores, that without a ``python-``/``py`` prefix or ``-python`` suffix, its first part (``ruamel.yaml``:
    ``ruamel``), and ``IMPORT_NAMES``. Generous on purpose: a wrong match keeps a requirement, it breaks nothing."""
    name = _name(requirement)
    under = name.replace("-", "_")
    found = {under, under.removeprefix("python_"), under.removeprefix("py"), under.removesuffix("_python")}
    return found | {name.split("-")[0]} | IMPORT_NAMES.get(name, set())


def _leave_out_unused(root: Path, out: Detected) -> None:
    """Drop the test and dev lists' requirements that the tests do not use: neither imported nor asked for as a
    fixture by any test file or conftest, and not pytest or a pytest plugin. Where the tests import a module no
    requirement's name accounts for, nothing is dropped: the provider cannot be told (docs/authoring.md)."""
    found = used_by_tests(root)
    if found is None:
        if out.optional:
            out.notes.append("no test files found to read imports from: every test and dev requirement kept")
        return
    imported, fixtures, third_party = found
    used = imported | fixtures

    def needed(requirement: str) -> bool:
        name = _name(requirement)
        return name == "pytest" or name.startswith("pytest-") or bool(import_names(requirement) & used)

    unused = [r for r in out.optional if not needed(r)]
    accounted = set().union(*(import_names(r) for r in out.python_packages)) if out.python_packages else set()
    unknown = sorted(m for m in third_party if m not in accounted)
    if unused and unknown:
        out.notes.append(f"kept {', '.join(map(_name, unused))}, which the tests do not import: they import "
                         f"{', '.join(unknown[:5])}, which no requirement's name accounts for")  # fmt: skip
        return
    if unused:
        out.python_packages = [r for r in out.python_packages if r not in unused]
        where = sorted({out.optional[r] for r in unused})
        out.notes.append(f"left out {', '.join(map(_name, unused))} ({', '.join(where)}): not imported by a test "
                         "file or conftest, nor pytest or a pytest plugin")  # fmt: skip


def _setenv(out: Detected, lines: list[str]) -> None:
    """tox's ``setenv``: ``NAME = value`` lines; values with substitutions (``{...}``) or runner variables left out."""
    for raw in lines:
        name, sep, value = raw.strip().partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not _ENV.fullmatch(name):
            continue
        if "{" in value or name in RUNNER_ENV:
            out.notes.append(f"tox.ini: left out setenv {name} (a tox substitution or a variable the verifier owns)")
            continue
        out.env.setdefault(name, value)


def _addopts(root: Path) -> str:
    """pytest's ``addopts`` from the configuration file pytest would read, in its order of precedence:
    ``pytest.ini``, ``.pytest.ini``, ``pyproject.toml`` with ``[tool.pytest.ini_options]``, ``tox.ini``,
    ``setup.cfg``."""
    for name, section in (("pytest.ini", "pytest"), (".pytest.ini", "pytest"), ("pyproject.toml", ""),
                          ("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):  # fmt: skip
        path = root / name
        if not path.is_file():
            continue
        if not section:
            try:
                options = tomllib.loads(path.read_text(encoding="utf-8")).get("tool", {}).get("pytest", {})
            except (tomllib.TOMLDecodeError, UnicodeDecodeError):
                continue
            if "ini_options" in options:
                opts = options["ini_options"].get("addopts", "")
                return " ".join(opts) if isinstance(opts, list) else str(opts)
            continue
        parser = configparser.ConfigParser(interpolation=None)
        try:
            parser.read_string(path.read_text(encoding="utf-8"))
        except (configparser.Error, UnicodeDecodeError):
            continue
        if parser.has_section(section):
            return parser.get(section, "addopts", fallback="")
    return ""


def _addopts_plugins(root: Path) -> list[str]:
    """The plugins the repository's pytest ``addopts`` need (``ADDOPTS_PLUGINS``)."""
    words = _addopts(root).split()
    joined = [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    found: list[str] = []
    for option, plugin in ADDOPTS_PLUGINS.items():
        glued = option.endswith("-") or (len(option) == 2 and option != "-p")  # --benchmark-x, -n4 / -nauto
        hit = any(w == option or w.startswith(option if glued else option + "=") for w in words)
        if (hit or option in joined) and plugin not in found:
            found.append(plugin)
    return found
