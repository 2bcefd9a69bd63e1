"""The test process of the second check: run the FAIL_TO_PASS tests, record each one from inside its own call.

Started by ``second_check.py`` with its handover (ids, runner, plugins, the record descriptor and nonce) on
stdin, read before anything of the repository is imported. The framework is imported from the
interpreter's own paths first (as ``pytest_boot.py`` does), then the repository is put first on ``sys.path``.

Each selected test's callable is wrapped just before it is called (pytest: in ``pytest_runtest_call``, after
setup; unittest: on the test case instance; Django: on each test case instance as it is made, then
``tests/runtests.py`` runs; SymPy: the test function itself, called from its module): the wrapper writes
``call`` when it starts and ``pass`` or ``fail <exception>`` when the test's own code returns or raises,
straight to the descriptor, before any report object exists. Reports, JUnit XML and exit codes play no part.
A callable that is not the one collected from the test file (replaced by a plugin after collection) is
recorded as a failure, and a unittest test whose subtests failed as well.
"""

import functools
import inspect
import json
import os
import re
import sys
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))


def address(test_id):
    """``(classname, name)`` as pytest's JUnit writer names a node id (and ``agentbon.verify.junit.key_of``)."""
    path, bracket, params = test_id.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def dotted(test_id):
    """``tests/test_m.py::C::t`` -> ``tests.test_m.C.t``; dotted ids unchanged."""
    if "::" not in test_id and not test_id.endswith(".py"):
        return test_id
    path, _, rest = test_id.partition("::")
    module = path[:-3] if path.endswith(".py") else path
    return ".".join([module.replace("/", ".")] + [p for p in rest.split("::") if p])


def code_of(fn):
    """The code object a test callable runs in the end (through bound methods and ``__wrapped__``), or None."""
    seen = 0
    while seen < 100:
        seen += 1
        inner = getattr(fn, "__func__", None) or getattr(fn, "__wrapped__", None)
        if inner is None:
            break
        fn = inner
    return getattr(fn, "__code__", None)


class Records:
    """Writes records to the inherited descriptor, each line prefixed with the driver's nonce."""

    def __init__(self, fd, nonce):
        self.fd, self.nonce = fd, nonce

    def emit(self, index, event):
        try:
            os.write(self.fd, f"{self.nonce} {index} {event}\n".encode("utf-8", "replace"))
        except OSError:
            pass

    def wrap(self, fn, index):
        """``fn`` wrapped so that its own call is recorded (async stays async, attributes are kept)."""
        emit = self.emit

        def done():
            outcome = getattr(getattr(fn, "__self__", None), "_outcome", None)  # unittest: a failed subtest
            if outcome is not None and getattr(outcome, "success", True) is False:
                emit(index, "fail subtest")
            else:
                emit(index, "pass")

        if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__func__", None)):

            async def wrapper(*args, **kwargs):
                emit(index, "call")
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as e:
                    emit(index, "fail " + type(e).__name__)
                    raise
                done()
                return result

        else:

            def wrapper(*args, **kwargs):
                emit(index, "call")
                try:
                    result = fn(*args, **kwargs)
                except BaseException as e:
                    emit(index, "fail " + type(e).__name__)
                    raise
                done()
                return result

        try:
            functools.update_wrapper(wrapper, fn)
        except (AttributeError, TypeError):
            pass
        return wrapper


class PytestRecorder:
    """The pytest plugin of the second check: selects the ids, wraps each one's callable at call time."""

    def __init__(self, records, ids):
        self.records = records
        self.wanted = {address(t): i for i, t in enumerate(ids)}
        self.collected = {}

    def index(self, item):
        return self.wanted.get(address(item.nodeid))

    def pytest_configure(self, config):
        # pytest-xdist would run the tests in workers this plugin is not in.
        if getattr(config.option, "dist", "no") != "no":
            config.option.dist = "no"
            config.option.numprocesses = None

    def pytest_itemcollected(self, item):
        if self.index(item) is not None:
            try:
                self.collected[item.nodeid] = code_of(item.obj)
            except Exception:  # an item without a Python callable
                self.collected[item.nodeid] = None

    def pytest_collection_modifyitems(self, session, config, items):
        keep = [i for i in items if self.index(i) is not None]
        rest = [i for i in items if self.index(i) is None]
        if rest:
            config.hook.pytest_deselected(items=rest)
        items[:] = keep

    def pytest_runtest_call(self, item):
        index = self.index(item)
        if index is None:
            yield
            return
        original = item.obj
        expected = self.collected.get(item.nodeid)
        if expected is not None and code_of(original) is not expected:
            self.records.emit(index, "fail replaced")
        item.obj = self.records.wrap(original, index)
        try:
            yield
        finally:
            item.obj = original


def run_pytest(config, records):
    import pytest_boot

    for name in pytest_boot.PREIMPORT:
        try:
            __import__(name)
        except ImportError:
            pass
    import pytest

    cwd = os.getcwd()
    args = ["-p", "no:cacheprovider", "-q", "--color=no", "--maxfail=0"]
    for plugin in config.get("plugins") or []:
        args += ["-p", plugin]
    files = []
    for test_id in config["ids"]:
        path = test_id.split("::", 1)[0]
        if path not in files:
            files.append(path)
    args = pytest_boot.load_plugins(args + files, cwd, autoload=not os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD"))
    recorder = PytestRecorder(records, config["ids"])
    hooks = {
        "pytest_configure": pytest.hookimpl(tryfirst=True),
        "pytest_itemcollected": pytest.hookimpl(tryfirst=True),
        "pytest_collection_modifyitems": pytest.hookimpl(trylast=True),
        "pytest_runtest_call": pytest.hookimpl(hookwrapper=True, tryfirst=True),
    }
    for name, mark in hooks.items():
        mark(getattr(PytestRecorder, name))
    sys.path[:] = [cwd] + [p for p in sys.path if os.path.abspath(p or ".") != cwd]
    pytest.main(args, plugins=[recorder])


def run_unittest(config, records):
    import unittest

    sys.path[:] = [os.getcwd()] + sys.path
    loader = unittest.TestLoader()

    def flat(suite):
        for test in suite:
            if isinstance(test, unittest.TestSuite):
                yield from flat(test)
            else:
                yield test

    for index, test_id in enumerate(config["ids"]):
        name = dotted(test_id)
        try:
            suite = loader.loadTestsFromName(name)
        except Exception:  # cannot be loaded: no record, the id is missing
            continue
        for test in flat(suite):
            method = getattr(test, "_testMethodName", None)
            if test.id() != name or not method:
                continue
            setattr(test, method, records.wrap(getattr(test, method), index))
            test.run(unittest.TestResult())


def run_django(config, records):
    """Django's own ``tests/runtests.py``, run in this process with the ids as its labels (``app.tests.C.test_x``),
    one process, no parallel workers. Each selected test case is wrapped when it is made, before Django's runner
    sees it: the method an instance will call is the recorder's wrapper around the one its class had."""
    import runpy
    import unittest

    cwd = os.getcwd()
    wanted = {t: i for i, t in enumerate(config["ids"])}
    made = unittest.TestCase.__init__

    def init(self, methodName="runTest"):
        made(self, methodName)
        index = wanted.get(self.id())
        if index is not None and hasattr(self, methodName):
            wrapped = records.wrap(getattr(self, methodName), index)

            def bound(_self, *args, **kwargs):
                return wrapped(*args, **kwargs)

            # a bound method, not a plain function: unittest's loader takes an instance's function for a static one
            setattr(self, methodName, types.MethodType(bound, self))

    unittest.TestCase.__init__ = init
    script = os.path.join(cwd, "tests", "runtests.py")
    argv = [script, "--verbosity", "0", "--parallel", "1"]
    if config.get("settings"):
        argv.append("--settings=" + config["settings"])
    sys.argv = argv + list(config["ids"])
    sys.path[:] = [os.path.dirname(script)] + sys.path  # as ``python tests/runtests.py`` puts its folder first
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit:
        pass


def run_sympy(config, records):
    """SymPy's test functions called from the files the harness's command names, each by its name, in this process
    (as ``bin/test`` calls them: no fixtures, no arguments). A name found in several files is called in each."""
    import importlib

    sys.path[:] = [os.getcwd()] + sys.path
    wanted = {t: i for i, t in enumerate(config["ids"])}
    for path in config.get("files") or []:
        try:
            module = importlib.import_module(path[:-3].replace("/", "."))
        except BaseException:  # an import that fails: its tests are missing
            continue
        for name, index in wanted.items():
            fn = vars(module).get(name)
            if callable(fn):
                try:
                    records.wrap(fn, index)()
                except BaseException:
                    pass


def main():
    config = json.loads(sys.stdin.buffer.read().decode("utf-8") or "{}")
    sys.stdin.close()
    records = Records(config["fd"], config["nonce"])
    cwd = os.getcwd()
    # The framework from the interpreter's own paths: nothing of the repository is importable yet.
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") not in (cwd, HERE)] + [HERE]
    sys.dont_write_bytecode = True
    try:
        runner = config.get("runner")
        if runner == "unittest":
            run_unittest(config, records)
        elif runner == "django":
            run_django(config, records)
        elif runner == "sympy":
            run_sympy(config, records)
        else:
            run_pytest(config, records)
    except BaseException:  # the ids it did not reach are missing; say why in the output the verdict keeps
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


if __name__ == "__main__":
    main()
