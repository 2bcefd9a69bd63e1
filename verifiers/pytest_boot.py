"""Start pytest with the framework imported before the repository is on ``sys.path`` (stdlib only).

``python -m pytest`` puts the repository first on ``sys.path``, so a candidate could add ``pytest.py``,
``_pytest/`` or ``xml/`` at the repository root and replace the framework that writes the JUnit XML.
Importing those modules first, from the interpreter's own paths, closes that door; the repository is
then put first on ``sys.path`` as ``python -m pytest`` would.

Limit: the candidate's code runs in this process, so code written to know this runner can still
rewrite results from inside (monkeypatching pytest while the session runs); nothing here prevents
that. The verifier detects it instead: canary tests planted in the same session must come out as
planted, and the FAIL_TO_PASS tests are run again in a separate process (docs/security.md). The guard,
the exit-code cross-check and the immediate ``os._exit`` below stop what does not run inside the process.

Plugins named with ``-p`` (the task's ``pytest_plugins``) are imported here too, by module or entry-point
name, so that a module of the same name added to the repository cannot stand in for them.
"""

import os
import sys

ALREADY_IMPORTED_OK = "-Wignore:Module already imported so cannot be rewritten:pytest.PytestAssertRewriteWarning"
PREIMPORT = ("pytest", "_pytest.junitxml", "_pytest.unittest", "_pytest.python", "xml.etree.ElementTree", "unittest")


def _entry_point_module(name, repo):
    """The module of the installed ``pytest11`` entry point called ``name`` (none inside ``repo``), or None."""
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8: names are modules
        return None
    for dist in metadata.distributions():
        try:
            where = os.path.abspath(str(dist.locate_file("")))
            if where == repo or where.startswith(repo + os.sep):
                continue
            for ep in dist.entry_points:
                if ep.group == "pytest11" and ep.name == name and ":" not in ep.value:
                    return ep.value.strip()
        except Exception:  # a broken distribution's metadata
            continue
    return None


def load_plugins(args, repo, autoload):
    """pytest's arguments with each ``-p NAME`` imported now and named by its module.

    An entry-point name becomes its module, which every pytest version can load with ``-p`` while autoload is
    off; with autoload on, the entry point loads by itself, so it is not named twice (pytest refuses a plugin
    registered under two names). A plugin that fails to import is left for pytest to meet again and report.
    """
    out, i, imported = [], 0, False
    while i < len(args):
        if args[i] == "-p" and i + 1 < len(args) and not args[i + 1].startswith("no:"):
            module = _entry_point_module(args[i + 1], repo)
            try:
                __import__(module or args[i + 1])
            except KeyboardInterrupt:
                raise
            except BaseException:  # ImportError, or pytest's Skipped raised by a plugin at import
                pass
            if not (module and autoload):
                out += ["-p", module or args[i + 1]]
            imported = True
            i += 2
            continue
        out.append(args[i])
        i += 1
    # Imported here, a plugin cannot be assertion-rewritten; pytest warns, and a repository whose configuration
    # turns warnings into errors (``filterwarnings = error``) would stop before collecting (found on humanize).
    return [ALREADY_IMPORTED_OK, *out] if imported else out


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    cwd = os.getcwd()
    saved = [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.path[:] = [p for p in saved if os.path.abspath(p or ".") != cwd]
    sys.dont_write_bytecode = True
    for name in PREIMPORT:
        try:
            __import__(name)
        except ImportError:
            pass
    import pytest

    args = load_plugins(sys.argv[1:], cwd, autoload=not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"))
    sys.path[:] = [cwd] + [p for p in saved if os.path.abspath(p or ".") != cwd]
    code = int(pytest.main(args))
    sys.stdout.flush()
    sys.stderr.flush()
    # The JUnit XML is written: leave now, so that no atexit hook or lingering code of the candidate
    # runs after it to rewrite the XML or change the exit code.
    os._exit(code)


if __name__ == "__main__":
    main()
