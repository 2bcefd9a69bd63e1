"""Run pytest on a task's tests inside the verification sandbox (stdlib only; Python 3.6+).

Usage: ``python3 -I run_pytest.py SPEC.json`` from the repository root. The spec names the test ids,
the JUnit XML path (fresh and unpredictable, outside the repository), the result path and the time
limit. pytest runs on the test files of the ids (whole files, so one unknown id cannot stop the run),
with the cache plugin off, plugin autoload off, ``PYTEST_ADDOPTS`` cleared, no ``maxfail`` (a ``-x`` in the
project's ``addopts`` would stop the session before the canaries or the graded tests) and xunit2 JUnit output.
The verifier's canary modules (``agentbon_canary.py``) are planted beside the graded files, run after them in the
same invocation, and removed as soon as it ends.
The spec's ``plugins`` are loaded with ``-p`` (``pytest_boot.py`` imports them before the repository is on
``sys.path``); ``plugin_autoload`` true lets pytest load every installed plugin.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import agentbon_canary as canary  # noqa: E402
import agentbon_supervise as sup  # noqa: E402

WATCHED_NAMES = ("conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml")
SKIP_DIRS = (".git", "node_modules", ".tox", ".venv", "venv", "__pycache__")


def test_files(ids):
    """The files of the test ids, in order, without repeats."""
    seen = []
    for test_id in ids:
        path = test_id.split("::", 1)[0]
        if path not in seen:
            seen.append(path)
    return seen


def watched_files(files):
    """Files whose change during the run means the run cannot be trusted: the test files and pytest's config."""
    out = list(files)
    budget = 50000
    for root, dirs, names in os.walk("."):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        budget -= len(names) + 1
        if budget < 0:
            break
        out.extend(os.path.join(root, n)[2:] for n in names if n in WATCHED_NAMES)
    return sorted(set(out))


def main():
    spec = sup.load_spec(sys.argv)
    files = test_files(spec.get("ids", []))
    present = [f for f in files if os.path.exists(f)]
    args = [
        "-p",
        "no:cacheprovider",
        "--junitxml=" + spec["junit"],
        "-o",
        "junit_family=xunit2",
        "-o",
        "junit_logging=no",
        "--continue-on-collection-errors",
        "--maxfail=0",
        "--color=no",
        "-q",
    ]
    for plugin in spec.get("plugins") or []:
        args += ["-p", plugin]
    args += present or files
    here = os.path.dirname(os.path.abspath(__file__))
    argv = [spec.get("python") or sys.executable, "-B", os.path.join(here, "pytest_boot.py")] + args
    watched = sup.digest_files(watched_files(files))
    env = sup.clean_env()
    if spec.get("plugin_autoload"):
        env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    # The canaries run in the same pytest invocation, after the graded files (docs/security.md, "Canaries").
    planted = canary.plant(spec)
    try:
        result = sup.supervise(argv + planted.files, env, spec["timeout_s"], spec.get("output_limit", 20000))
    finally:
        changed = canary.remove(planted)
    result["canaries_changed"] = changed
    result["missing_files"] = [f for f in files if f not in present]
    sup.finish(spec, result, watched)


if __name__ == "__main__":
    main()
