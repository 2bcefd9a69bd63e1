"""The evidence rule read from a test patch: files it creates and names it defines do not exist before it."""

from __future__ import annotations

from agentbon.verify.testpatch import module_forms, not_before, patch_facts

PATCH = """diff --git a/tests/test_a.py b/tests/test_a.py
--- a/tests/test_a.py
+++ b/tests/test_a.py
@@ -1,6 +1,9 @@
 class Mixin:
-    def check_thing(self):
+    def test_thing(self):
         pass
-    def test_kept(self, x):
+    def test_kept(self, x, y):
         pass
+
+def test_brand_new():
+    pass
diff --git a/tests/test_b.py b/tests/test_b.py
new file mode 100644
--- /dev/null
+++ b/tests/test_b.py
@@ -0,0 +1,2 @@
+def test_in_new_file():
+    pass
"""


def test_patch_facts_separates_created_files_and_names_the_patch_defines():
    facts = patch_facts(PATCH)
    assert facts.added_files == {"tests/test_b.py"}
    assert facts.changed_files == {"tests/test_a.py", "tests/test_b.py"}
    # test_kept is redefined (removed and added): it exists before the patch
    assert facts.introduced == {
        "test_thing": "tests/test_a.py",
        "test_brand_new": "tests/test_a.py",
        "test_in_new_file": "tests/test_b.py",
    }


def test_pytest_ids_new_by_file_or_by_name_even_in_another_file():
    ids = [
        "tests/test_a.py::Case::test_kept",
        "tests/test_a.py::Case::test_thing",
        "tests/test_c.py::Sub::test_thing[1]",  # a subclass elsewhere collects the mixin's new test
        "tests/test_b.py::test_in_new_file",
        "tests/test_c.py::test_other",
    ]
    gone = not_before(ids, PATCH)
    assert sorted(gone) == [
        "tests/test_a.py::Case::test_thing",
        "tests/test_b.py::test_in_new_file",
        "tests/test_c.py::Sub::test_thing[1]",
    ]
    assert gone["tests/test_b.py::test_in_new_file"] == "in tests/test_b.py, which the test patch creates"
    assert gone["tests/test_a.py::Case::test_thing"].startswith("test_thing is defined by the test patch")


def test_django_and_sympy_ids():
    patch = PATCH.replace("tests/test_b.py", "tests/shapes/test_units.py")
    ids = [
        "test_in_new_file (shapes.test_units.UnitTests)",
        "test_x (shapes.test_units.UnitTests.test_x)",  # Django >= 5 prints the method too
        "test_kept (shapes.tests.Case)",
        "test_brand_new (shapes.tests.Case)",
        "test_brand_new",  # SymPy: a bare function name
        "test_kept",
    ]
    assert sorted(not_before(ids, patch)) == [
        "test_brand_new",
        "test_brand_new (shapes.tests.Case)",
        "test_in_new_file (shapes.test_units.UnitTests)",
        "test_x (shapes.test_units.UnitTests.test_x)",
    ]


def test_what_an_applied_patch_brings_is_there():
    evidence_patch = PATCH.split("diff --git a/tests/test_b.py")[0]
    assert sorted(not_before(["tests/test_a.py::test_brand_new", "tests/test_b.py::test_in_new_file"], PATCH,
                             present=evidence_patch)) == ["tests/test_b.py::test_in_new_file"]  # fmt: skip


def test_module_forms_cover_django_labels():
    assert module_forms("tests/admin_views/tests.py") == {
        "tests/admin_views/tests.py",
        "tests/admin_views/tests",
        "tests.admin_views.tests",
        "admin_views.tests",
    }
    assert not_before(["tests/x.py::test_a"], "") == {}


def _git_diff(tmp_path, before: str, after: str) -> str:
    import subprocess

    def git(*args: str) -> str:
        cfg = ["-c", "user.name=t", "-c", "user.email=t@localhost", "-c", "commit.gpgsign=false"]
        return subprocess.run(["git", *cfg, *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text(before)
    git("add", "-A")
    git("commit", "-q", "-m", "base")
    (tmp_path / "tests" / "test_a.py").write_text(after)
    return git("diff")


def test_a_method_added_to_one_test_class_is_keyed_by_its_full_node_id(tmp_path):
    filler = "".join(f"    def test_filler_{i}(self):\n        pass\n\n" for i in range(8))  # hunks apart
    before = (
        "import unittest\n\n\nclass TestA:\n    def test_parse(self):\n        assert True\n\n\n"
        f"class ParseTests(unittest.TestCase):\n{filler}    def test_other(self):\n        pass\n\n\n"
        f"class Mixin:\n{filler}    def helper(self):\n        pass\n\n\n"
        "class TestUsesMixin(Mixin):\n    def test_ok(self):\n        pass\n"
    )
    after = (
        before.replace("    def test_other(self):\n", "    def test_parse(self):\n        pass\n\n    def test_other(self):\n")
        .replace("    def helper(self):\n", "    def test_mixed(self):\n        pass\n\n    def helper(self):\n")
        + "\n\nclass TestSub(ParseTests):\n    def test_more(self):\n        pass\n"
    )
    patch = _git_diff(tmp_path, before, after)
    assert "@@" in patch and "class ParseTests(unittest.TestCase)" in patch  # the hunk names its class
    ids = [
        "tests/test_a.py::TestA::test_parse",  # an older test of the same name: it exists before the patch
        "tests/test_a.py::ParseTests::test_parse",  # the new one
        "tests/test_a.py::TestSub::test_parse",  # a class the patch shows deriving from ParseTests collects it
        "tests/test_a.py::TestUsesMixin::test_mixed",  # a mixin's new test: new in every class
    ]
    assert sorted(not_before(ids, patch)) == sorted(ids[1:])
