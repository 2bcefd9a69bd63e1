"""The evidence copy of the harness's eval script: no test patch, no directive naming a file only the patch creates."""

from __future__ import annotations

from agentbon.verify.evalscript import command_span, without_test_patch
from tests.swebench.families import DJANGO, PYTEST, eval_script

TEST_PATCH = """diff --git a/tests/test_ops.py b/tests/test_ops.py
--- a/tests/test_ops.py
+++ b/tests/test_ops.py
@@ -1 +1,2 @@
 x = 1
+y = 2
diff --git a/tests/test_new.py b/tests/test_new.py
new file mode 100644
--- /dev/null
+++ b/tests/test_new.py
@@ -0,0 +1 @@
+z = 3
"""


def _command(script: str) -> list[str]:
    start, end = command_span(script)
    return script.split("\n")[start:end]


def test_pytest_script_loses_the_heredoc_and_the_created_file():
    script = eval_script("abc123", TEST_PATCH, PYTEST.test_command, ["tests/test_ops.py", "tests/test_new.py"])
    assert _command(script) == ["pytest -rA tests/test_ops.py tests/test_new.py"]
    at_base, why = without_test_patch(script, TEST_PATCH)
    assert why == "" and at_base is not None
    assert "EOF_114329324912" not in at_base and "+y = 2" not in at_base and "git apply" not in at_base
    assert _command(at_base) == ["pytest -rA tests/test_ops.py"]
    # everything else is the harness's script, line for line (activation, resets, markers)
    kept = [line for line in script.split("\n") if line not in at_base.split("\n")]
    assert (
        kept[0].startswith("git apply -v - <<'EOF_114329324912'")
        and kept[-1] == "pytest -rA tests/test_ops.py tests/test_new.py"
    )
    assert at_base.count("git checkout abc123 tests/test_ops.py") == 2


def test_django_labels_of_created_modules_are_dropped():
    patch = TEST_PATCH.replace("tests/test_ops.py", "tests/shapes/tests.py").replace(
        "tests/test_new.py", "tests/shapes/test_units.py"
    )
    script = eval_script("abc", patch, DJANGO.test_command, ["shapes.tests", "shapes.test_units"])
    at_base, _ = without_test_patch(script, patch)
    assert _command(at_base) == [f"{DJANGO.test_command} shapes.tests"]


def test_no_script_when_every_test_file_is_created_or_nothing_is_recognised():
    created_only = TEST_PATCH.split("diff --git a/tests/test_new.py")[1]
    created_only = "diff --git a/tests/test_new.py" + created_only
    script = eval_script("abc", created_only, "pytest -rA", ["tests/test_new.py"])
    assert without_test_patch(script, created_only) == (
        None, "every test file the test command names is created by the test patch")  # fmt: skip
    plain = "#!/bin/bash\n: '>>>>> Start Test Output'\npytest\n: '>>>>> End Test Output'\n"
    assert without_test_patch(plain, TEST_PATCH)[0] is None
    no_markers = "git apply -v - <<'E'\npatch\nE\npytest\n"
    assert without_test_patch(no_markers, TEST_PATCH) == (None, "the eval script has no test output markers")
