"""What a repository declares for its tests becomes the task image's environment (pure: files only)."""

from __future__ import annotations

from pathlib import Path

from agentbon.author.commit import environment_for
from agentbon.author.detect import INSTALL_SELF, UPGRADE, detect
from agentbon.types import Environment


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_every_declaration_is_read_once_and_the_project_installs_itself(tmp_path):
    root = write(tmp_path, {
        "pyproject.toml": '[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n'
                          '[project]\nname = "Acme_Billing"\ndependencies = ["requests>=2.31", "attrs"]\n'
                          '[project.optional-dependencies]\ntest = ["pytest>=8", "acme-billing[fast]", "freezegun"]\n'
                          'docs = ["sphinx"]\n[dependency-groups]\ndev = ["pytest-mock", {include-group = "lint"}]\nlint = ["ruff"]\n',
        "requirements-dev.txt": "-r requirements/base.txt\n-e .\nhypothesis==6.*  # property tests\n# a comment\n",
        "requirements/base.txt": "Requests\nidna\n",
        "tox.ini": "[testenv]\ndeps =\n    coverage\n    {posargs}\n    -rrequirements-dev.txt\n",
        "tests/conftest.py": "import freezegun\nfrom hypothesis import given\n",
    })  # fmt: skip
    found = detect(root)
    assert found.python_packages == [
        *UPGRADE,
        "requests>=2.31",
        "attrs",
        "pytest>=8",
        "freezegun",
        "pytest-mock",
        "hypothesis==6.*",
    ]  # the project itself (any spelling), sphinx (docs), and what no test imports (ruff, idna, coverage) are not in it
    assert found.setup == [INSTALL_SELF]
    assert any(
        "left out ruff, idna, coverage (dependency group 'dev', requirements/base.txt, tox.ini): not imported" in note
        for note in found.notes
    )
    assert any("left out '-e .'" in note for note in found.notes)


def test_setup_cfg_extras_and_a_plain_folder(tmp_path):
    cfg = write(tmp_path / "cfg", {
        "setup.cfg": "[metadata]\nname = ledger\n[options]\ninstall_requires =\n    python-dateutil\n"
                     "[options.extras_require]\ntesting =\n    pytest\n    ledger[extra]\n",
    })  # fmt: skip
    assert detect(cfg).python_packages == [*UPGRADE, "python-dateutil", "pytest"]  # no test file: all kept
    plain = write(tmp_path / "plain", {"calc.py": "x = 1\n", "tests/test_calc.py": "def test(): pass\n"})
    assert detect(plain).python_packages == [] and detect(plain).setup == []


def test_what_is_given_overrides_each_guess():
    guess = detect.__globals__["Detected"](python_packages=["a"], setup=["make"], env={"PYTHONPATH": "src"})
    assert environment_for(Environment(), guess) == Environment(
        python_packages=["a"], setup=["make"], env={"PYTHONPATH": "src"}
    )
    assert environment_for(Environment(env={"X": "1"}), guess).env == {"X": "1"}
    assert environment_for(Environment(python_packages=["b"]), guess) == Environment(
        python_packages=["b"], setup=["make"], env={"PYTHONPATH": "src"}
    )
    assert environment_for(Environment(image="img:1"), guess) == Environment(image="img:1", env={"PYTHONPATH": "src"})
    assert environment_for(Environment(setup=["x"]), None) == Environment(setup=["x"])


def test_a_broken_pyproject_is_a_note_not_a_crash(tmp_path):
    root = write(tmp_path, {"pyproject.toml": "[project\nname = 1\n", "requirements.txt": "six\n"})
    found = detect(root)
    assert found.python_packages == ["six"] and "pyproject.toml: not read" in found.notes[0]


def test_test_variables_from_tox_and_an_uninstalled_src_layout(tmp_path):
    root = write(tmp_path / "tox", {
        "tox.ini": "[testenv]\nsetenv =\n    TZ = UTC\n    HOME = {envtmpdir}\n    PYTEST_ADDOPTS = -p evil\n"
                   "    not a line\n",
        "src/ledger/__init__.py": "",
    })  # fmt: skip
    found = detect(root)
    assert found.env == {"TZ": "UTC", "PYTHONPATH": "src"}  # substitutions and the verifier's own variables left out
    assert sum("left out setenv" in note for note in found.notes) == 2
    installed = write(tmp_path / "installed", {"setup.py": "", "src/ledger/__init__.py": ""})
    assert detect(installed).env == {}  # installed editable: src/ imports without a path
    assert detect(write(tmp_path / "flat", {"ledger/__init__.py": ""})).env == {}


def test_plugins_that_pytest_addopts_need_and_tox_factor_deps(tmp_path):
    pyproject = write(tmp_path / "pyproject", {
        "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "--cov=acme --cov-report=term -n auto --doctest-modules"\n',
    })  # fmt: skip
    assert detect(pyproject).python_packages == ["pytest-cov", "pytest-xdist"]
    ini = write(tmp_path / "ini", {"setup.cfg": "[tool:pytest]\naddopts = --timeout=30 -p xdist\n"})
    assert detect(ini).python_packages == [*UPGRADE, "pytest-timeout", "pytest-xdist"]
    tox = write(tmp_path / "tox", {
        "tox.ini": "[testenv]\ndeps =\n    pytest\n    unidecode: Unidecode>=1.1\n    py311,!fast: hypothesis\n",
    })  # fmt: skip
    found = detect(tox)
    assert found.python_packages == ["pytest"]
    assert sum("only for the tox environments" in note for note in found.notes) == 2


def test_addopts_come_from_the_file_pytest_reads_first(tmp_path):
    root = write(tmp_path, {
        "pyproject.toml": '[tool.pytest.ini_options]\naddopts = "-nauto"\n',
        "setup.cfg": "[tool:pytest]\naddopts = --cov=x\n",
    })  # fmt: skip
    assert detect(root).python_packages == [*UPGRADE, "pytest-xdist"]  # pyproject.toml before setup.cfg, as pytest
    (root / "pytest.ini").write_text("[pytest]\naddopts = --timeout 5\n")
    assert detect(root).python_packages == [*UPGRADE, "pytest-timeout"]


def test_test_and_dev_requirements_stay_only_where_the_tests_use_them(tmp_path):
    root = write(tmp_path, {
        "pyproject.toml": '[project]\nname = "shop"\ndependencies = ["flask", "pyyaml"]\n',
        "requirements-dev.txt": "pytest>=7\nflake8\nflake8-bugbear\nblack==24.1\ntox\ntwine\npre-commit\nhypothesis\n"
                                "PyYAML\npython-dateutil\nBeautifulSoup4\nrequests-mock\npytest-mock\ntzdata\nsphinx\n",
        "tests/test_shop.py": "from hypothesis import given\nimport dateutil.parser as p\nfrom bs4 import BeautifulSoup\n"
                              "from . import helpers\nimport shop, os\n\ndef test_get(requests_mock, mocker): pass\n",
        "tests/helpers.py": "",
        "tests/sub/conftest.py": "import zoneinfo\n",  # tzdata: the data zoneinfo reads
        "shop/__init__.py": "import flask\n",
    })  # fmt: skip
    found = detect(root)
    # runtime dependencies stay whatever the tests import; pyyaml's dev duplicate is the same requirement
    assert found.python_packages == [
        *UPGRADE, "flask", "pyyaml", "pytest>=7", "hypothesis", "python-dateutil", "BeautifulSoup4", "requests-mock",
        "pytest-mock", "tzdata",
    ]  # fmt: skip
    assert any(
        "left out flake8, flake8-bugbear, black, tox, twine, pre-commit, sphinx (requirements-dev.txt)" in n
        for n in found.notes
    )
    # A runtime requirement (requirements.txt) that an extra read before it named too is kept all the same.
    runtime = write(tmp_path / "runtime", {
        "pyproject.toml": '[project]\nname = "app"\n[project.optional-dependencies]\ndev = ["tox", "black"]\n',
        "requirements.txt": "tox>=4\n", "tests/test_app.py": "import os\n",
    })  # fmt: skip
    assert detect(runtime).python_packages == [*UPGRADE, "tox"]
    # A module no requirement's name accounts for (it may come from any of them): nothing is dropped.
    (root / "tests/test_more.py").write_text("import mystery_lib\n")
    unsure = detect(root)
    assert "sphinx" in unsure.python_packages and "flake8" in unsure.python_packages
    assert any("which no requirement's name accounts for" in n and "mystery_lib" in n for n in unsure.notes)
