"""Start pytest with the framework imported before the repository is on ``sys.path`` (stdlib only).

``python -m pytest`` puts the repository first on ``sys.path``, so a candidate could add ``pytest.py``,
``_pytest/`` or ``xml/`` at the repository root and replace the framework that writes the JUnit XML.
Importing those modules first, from the interpreter's own paths, closes that door; the repository is
then put first on ``sys.path`` as ``python -m pytest`` would.

Limit: the candidate's code runs in this process, so code written to know this runner can still
forge results from inside (monkeypatching pytest while the session runs). The guard, the exit-code
cross-check and the immediate ``os._exit`` below stop every forgery that does not.
"""

import os
import sys

PREIMPORT = ("pytest", "_pytest.junitxml", "_pytest.unittest", "_pytest.python", "xml.etree.ElementTree", "unittest")


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

    sys.path[:] = [cwd] + [p for p in saved if os.path.abspath(p or ".") != cwd]
    code = int(pytest.main(sys.argv[1:]))
    sys.stdout.flush()
    sys.stderr.flush()
    # The JUnit XML is written: leave now, so that no atexit hook or lingering code of the candidate
    # runs after it to rewrite the XML or change the exit code.
    os._exit(code)


if __name__ == "__main__":
    main()
