"""Load and run unittest tests by id; write JUnit XML with one testcase per test (stdlib only).

Run by ``run_unittest.py`` in a child process. The exit code is 0 iff every test passed (skips
allowed), as ``python -m unittest`` reports it, so the verifier can cross-check it with the XML.
"""

import os
import sys
import time
import traceback
import unittest

import agentbon_canary as canary
import agentbon_supervise as sup


def dotted(test_id):
    """``tests/test_m.py::C::t`` → ``tests.test_m.C.t``; dotted ids unchanged."""
    if "::" not in test_id and not test_id.endswith(".py"):
        return test_id
    path, _, rest = test_id.partition("::")
    module = path[:-3] if path.endswith(".py") else path
    parts = [module.replace("/", ".")] + ([p for p in rest.split("::") if p] if rest else [])
    return ".".join(parts)


class JUnitResult(unittest.TestResult):
    """Records one outcome per test id; a failing subtest fails its test."""

    def __init__(self):
        super().__init__()
        self.cases = {}
        self._started = {}

    def _record(self, test, outcome, message="", details=""):
        tid = test.id()
        previous = self.cases.get(tid)
        rank = {"passed": 0, "skipped": 1, "xfailed": 1, "failed": 2, "error": 3}
        if previous and rank[previous["outcome"]] >= rank[outcome]:
            return
        elapsed = time.time() - self._started.get(tid, time.time())
        classname, _, name = tid.rpartition(".")
        self.cases[tid] = {
            "classname": classname,
            "name": name,
            "outcome": outcome,
            "message": message,
            "details": details,
            "time": elapsed,
        }

    def startTest(self, test):
        super().startTest(test)
        self._started[test.id()] = time.time()

    def addSuccess(self, test):
        self._record(test, "passed")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failed", str(err[1]), "".join(traceback.format_exception(*err))[-4000:])

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error", str(err[1]), "".join(traceback.format_exception(*err))[-4000:])

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped", reason)

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._record(test, "xfailed", str(err[1]))

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._record(test, "failed", "unexpected success")

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        if err is not None:
            kind = "failed" if issubclass(err[0], test.failureException) else "error"
            self._record(test, kind, f"subtest {subtest._subDescription()}: {err[1]}")


def main():
    spec = sup.load_spec(sys.argv)
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [os.getcwd()] + [p for p in sys.path if os.path.abspath(p or ".") != here]
    sys.dont_write_bytecode = True
    loader = unittest.TestLoader()
    result = JUnitResult()
    for test_id in list(spec.get("ids", [])) + canary.ids(spec):
        name = dotted(test_id)
        before = set(result.cases)
        try:
            suite = loader.loadTestsFromName(name)
        except Exception as e:  # an import error or a missing attribute is this test's error
            result.cases[name] = {
                "classname": name.rpartition(".")[0],
                "name": name.rpartition(".")[2],
                "outcome": "error",
                "message": f"cannot load: {e!r}",
            }
            continue
        suite.run(result)
        new = [t for t in result.cases if t not in before]
        if not any(t == name or t.startswith(name + ".") for t in new):
            # The loader turned a failed import into a placeholder test with another id.
            message = "; ".join(result.cases[t]["message"] for t in new)[:500] or "not found"
            outcome = "error" if new else "missing"
            for t in new:
                del result.cases[t]
            if outcome == "error":
                result.cases[name] = {
                    "classname": name.rpartition(".")[0],
                    "name": name.rpartition(".")[2],
                    "outcome": outcome,
                    "message": message,
                }
    sup.write_junit(spec["junit"], list(result.cases.values()), suite="unittest")
    ok = all(c["outcome"] in ("passed", "skipped", "xfailed") for c in result.cases.values())
    sys.stdout.write("{} tests, {}\n".format(len(result.cases), "OK" if ok else "FAILED"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
