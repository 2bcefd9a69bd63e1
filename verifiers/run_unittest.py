"""Run unittest tests inside the verification sandbox and write JUnit XML (stdlib only; Python 3.6+).

Usage: ``python3 -I run_unittest.py SPEC.json`` from the repository root. Test ids are dotted
(``tests.test_mod.TestCase.test_name``) or pytest-style (``tests/test_mod.py::TestCase::test_name``).
The tests run in a child process (``unittest_boot.py``), supervised like pytest is, with the verifier's
canary modules planted beside them for the run (``agentbon_canary.py``).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import agentbon_canary as canary  # noqa: E402
import agentbon_supervise as sup  # noqa: E402
from run_pytest import watched_files  # noqa: E402


def main():
    spec = sup.load_spec(sys.argv)
    here = os.path.dirname(os.path.abspath(__file__))
    argv = [spec.get("python") or sys.executable, "-B", os.path.join(here, "unittest_boot.py"), sys.argv[1]]
    files = [i.split("::", 1)[0] for i in spec.get("ids", []) if "::" in i or i.endswith(".py")]
    watched = sup.digest_files(watched_files(files))
    # The canaries run in the same process, after the graded ids (docs/security.md, "Canaries").
    planted = canary.plant(spec)
    try:
        result = sup.supervise(argv, sup.clean_env(), spec["timeout_s"], spec.get("output_limit", 20000))
    finally:
        result_changed = canary.remove(planted)
    result["canaries_changed"] = result_changed
    sup.finish(spec, result, watched)


if __name__ == "__main__":
    main()
