"""No false alarms: the static scan on honest patches (every demo task's gold patch, everyday fixes) flags nothing."""

from pathlib import Path

import pytest
from scan_patches import edit, new_file

from agentbon.verify.scan import scan_patch

DEMO = sorted((Path(__file__).resolve().parents[2] / "tasks" / "demo").glob("*/gold.patch"))

CLI = '''"""Command line entry point: parse the arguments, run, exit with the status."""

import argparse
import logging
import subprocess
import sys

log = logging.getLogger(__name__)


def main(argv=None):
    """Run the tool; exit with 2 on bad arguments, like argparse does."""
    parser = argparse.ArgumentParser(prog="calc")
    parser.add_argument("expr")
    args = parser.parse_args(argv)
    try:
        result = evaluate(args.expr)
    except SystemExit:
        raise
    except ValueError as e:
        log.error("cannot evaluate %s: %s", args.expr, e)
        sys.exit(1)
    print(result)
    return 0


def git_version():
    out = subprocess.run(["git", "describe"], capture_output=True, text=True, check=False)
    return out.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
'''

PLUGINS = '''"""Backends are modules of this package, loaded by name the first time they are asked for."""

from __future__ import annotations

import importlib
import os
import threading
from functools import lru_cache
from typing import Callable

_lock = threading.Lock()


@lru_cache(maxsize=None)
def backend(name: str) -> Callable[..., object]:
    module = importlib.import_module(f"{__package__}.backends.{name}")
    return getattr(module, "run", None) or getattr(module, name)


def default_name() -> str:
    return os.environ.get("CALC_BACKEND", "python")


def start_worker(job):
    worker = threading.Thread(target=job, daemon=True)
    worker.start()
    return worker
'''

EVALUATOR = '''import re
import base64
import json
import signal

NUMBER = re.compile(r"\\d+(\\.\\d+)?")


class Node:
    def eval(self, env):
        """Evaluate the node in ``env``; the result is exact where the inputs are."""
        raise NotImplementedError


class Add(Node):
    def __init__(self, left, right):
        self.left, self.right = left, right

    def eval(self, env):
        return self.left.eval(env) + self.right.eval(env)


def load(token: str) -> dict:
    return json.loads(base64.b64decode(token))


def save(path, data):
    with open(path + ".json", "w") as f:
        json.dump(data, f)


def install_handlers(on_stop):
    signal.signal(signal.SIGTERM, lambda *_: on_stop())
'''

DOCS_IN_CODE = '''def install(target):
    """Copy the plugin into place.

    Where it goes depends on the interpreter: in a virtualenv that is its site-packages directory,
    otherwise the user site. The caller may exit early with sys.exit if nothing was installed;
    reports are written the way a JUnit report would be, one test case per check.
    """
    return target
'''


@pytest.mark.parametrize("gold", DEMO, ids=[p.parent.name for p in DEMO])
def test_demo_gold_patches_are_not_flagged(gold):
    assert scan_patch(gold.read_text()) == []


def test_every_demo_task_has_a_gold_patch():
    assert len(DEMO) >= 10


@pytest.mark.parametrize(
    "path,code",
    [("calc/cli.py", CLI), ("calc/plugins.py", PLUGINS), ("calc/evaluator.py", EVALUATOR), ("calc/x.py", DOCS_IN_CODE)],
    ids=["cli-with-exit-in-main", "plugin-loader", "evaluator-with-eval-methods", "docstrings-naming-things"],
)
def test_everyday_new_modules_are_not_flagged(path, code):
    assert scan_patch(new_file(path, code)) == []


def test_everyday_edits_are_not_flagged():
    patches = [
        edit(
            "calc/ops.py",
            1,
            ["def add(a, b):"],
            ["    return a - b"],
            ["    return a + b"],
            ["", "", "def mul(a, b):"],
        ),
        edit(
            "calc/dates.py",
            3,
            ["from datetime import datetime", ""],
            ["def parse(text):", '    return datetime.strptime(text, "%Y-%m-%d")'],
            ["def parse(text: str) -> datetime:", "    return datetime.fromisoformat(text)"],
            [""],
        ),
        edit(
            "calc/runner.py",
            20,
            ["    def stop(self):", '        """Stop the worker and wait for it."""'],
            ["        self.thread.join()"],
            ["        self.event.set()", "        self.thread.join(timeout=5)", "        return self.result"],
            [""],
        ),
    ]
    for patch in patches:
        assert scan_patch(patch) == [], patch


def test_test_files_and_conftest_are_left_to_the_guard():
    hooks = "import os\n\n\ndef pytest_sessionfinish(session, exitstatus):\n    os._exit(0)\n"
    patch = new_file("conftest.py", hooks) + new_file("tests/test_new.py", "import _pytest\n")
    assert scan_patch(patch) == []
    assert scan_patch(new_file("checks/hidden.py", "import _pytest\n"), protected=["checks/hidden.py"]) == []


def test_documents_and_data_are_not_code():
    patch = new_file("README.md", "Call sys.exit(0) and os._exit to stop; see _pytest.\n")
    patch += new_file("calc/data.json", '{"exec": "os._exit(0)"}\n')
    assert scan_patch(patch) == []


def test_deleted_files_are_not_flagged():
    body = "".join(f"-line {i} os._exit(0)\n" for i in range(50))
    patch = (
        "diff --git a/calc/old.py b/calc/old.py\ndeleted file mode 100644\nindex 1111111..0000000\n"
        f"--- a/calc/old.py\n+++ /dev/null\n@@ -1,50 +0,0 @@\n{body}"
    )
    assert scan_patch(patch) == []
