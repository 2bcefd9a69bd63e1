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
