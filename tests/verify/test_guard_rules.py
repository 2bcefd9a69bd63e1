"""The tamper guard's rules: which paths are protected, pytest sections, shadowing, restore commands."""

import pytest

from agentbon.verify import guard


@pytest.mark.parametrize(
    "path,why",
    [
        ("tests/test_x.py", "test file"),
        ("pkg/tests/helpers.py", "under a test directory"),
        ("src/test_utils_test.py", "test file"),
        ("deep/dir/conftest.py", "conftest"),
        ("pytest.ini", "runner config"),
        (".gitattributes", "runner config"),
        ("lib/evil.pth", "interpreter startup hook"),
        ("sitecustomize/__init__.py", "interpreter startup hook"),
        ("pkg/usercustomize.py", "interpreter startup hook"),
        ("hidden/check.py", "task test file"),
        ("pkg/module.py", None),
        ("pkg/contest.py", None),
        ("pyproject.toml", None),
    ],
)
def test_why_protected(path, why):
    assert guard.why_protected(path, {"hidden/check.py"}) == why


def test_shadowing_only_for_new_top_level_names():
    assert guard.shadows_module("pytest.py", {"calc"})
    assert guard.shadows_module("xml/__init__.py", {"calc"})
    assert guard.shadows_module("json.py", set())
    assert not guard.shadows_module("calc/json.py", {"calc"})
    assert not guard.shadows_module("email/x.py", {"email"})  # the repository's own package
    assert not guard.shadows_module("mylib.py", set())


def test_pytest_sections():
    base = '[project]\nname = "x"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'
    assert not guard.pytest_section_changed("pyproject.toml", base, base.replace('"x"', '"y"'))
    assert guard.pytest_section_changed("pyproject.toml", base, base.replace("-q", "-k nothing"))
    assert guard.pytest_section_changed("pyproject.toml", base, "not [valid toml")
    assert guard.pytest_section_changed("sub/setup.cfg", "[metadata]\nname=x\n", "[tool:pytest]\naddopts=-x\n")
    assert not guard.pytest_section_changed("tox.ini", None, "[tox]\nenvlist=py3\n")


def test_task_files_cover_ids_lists_and_test_patches(calc):
    files = guard.task_files(calc.task)
    assert {"tests/test_hidden.py", "tests/test_ops.py"} <= files


def test_a_code_module_hosting_doctests_is_not_a_test_file():
    """``--doctest-modules`` makes ``parse/__init__.py::parse.with_pattern`` a graded id: its file is the code the
    fix changes, so undoing it would undo every fix (found on parse's released tests)."""
    from agentbon.types import TestSet

    tests = TestSet(
        fail_to_pass=["tests/test_parse.py::test_tz[+0000]"],
        pass_to_pass=["parse/__init__.py::parse.with_pattern", "README.rst::README.rst", "pkg/m.py::test_plain",
                      "tests/test_doc.py::tests.test_doc.helper", "pkg/mixed.py::pkg.mixed.f", "pkg/mixed.py::TestC"],
    )  # fmt: skip
    files = guard._set_files(tests)
    assert "parse/__init__.py" not in files
    assert {"tests/test_parse.py", "README.rst", "pkg/m.py", "tests/test_doc.py", "pkg/mixed.py"} <= files
    assert guard.doctest_in_code("pkg/mod.py::pkg.mod.func") and not guard.doctest_in_code("t.py::test_p[1.5]")


def test_restore_script_deletes_additions_and_checks_out_the_rest():
    script = guard.restore_script([("A", "conftest.py"), ("M", "tests/t.py"), ("D", "a b.py"), ("M", ".gitattributes")])
    assert script.index("git rm") < script.index("git checkout HEAD -- .gitattributes") < script.index("'a b.py'")
    assert guard.restore_script([]) == "true"
