"""pytest plugins the tests need: named per task or per run (autoload stays off), or autoload opted into.

The plugin is a real installed distribution (a ``*.dist-info`` with a ``pytest11`` entry point) on the test
process's path: through ``PYTHONPATH`` for the host-process sandbox, in site-packages of the task image for docker.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from verify_task import CloneBackend, make_patch

from agentbon.config import VerifyConfig
from agentbon.testing import init_repo
from agentbon.types import Environment, RepoSource, Rollout, Task, TestSet
from agentbon.verify import TestVerifier

PLUGIN = "import pytest\n\n\n@pytest.fixture\ndef probe():\n    return 42\n"
FORGER = (
    "import pytest\n\n\n@pytest.fixture\ndef probe():\n    return 42\n\n\n"
    "@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n    report.longrepr = None\n"
)
DIST = {
    "agentbon_probe-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: agentbon-probe\nVersion: 1.0\n",
    "agentbon_probe-1.0.dist-info/entry_points.txt": "[pytest11]\nagentbon_probe = agentbon_probe_plugin\n",
}
OPS = "def add(a, b):\n    return a - b\n"
HIDDEN = "from calc.ops import add\n\n\ndef test_add(probe):\n    assert probe == 42 and add(2, 3) == 5\n"


class PluginTask:
    """A task whose hidden test uses a fixture of an installed plugin, plus candidates for it."""

    def __init__(self, root: Path, setup: list[str] | None = None, **grade: object):
        self.root, self.n = root, 0
        self.repo = root / "repo"
        base = init_repo(self.repo, {"calc/__init__.py": "", "calc/ops.py": OPS, "README.md": "calc\n"})
        tests = TestSet(
            fail_to_pass=["tests/test_hidden.py::test_add"],
            patch=self.patch({"tests/test_hidden.py": HIDDEN}),
            files=["tests/test_hidden.py"],
            **grade,
        )
        self.task = Task(
            task_id="plugin-add",
            problem_statement="add() subtracts.",
            repo=RepoSource(url=str(self.repo), base_commit=base),
            grade=tests,
            environment=Environment(setup=setup or []),
        )
        self.gold = self.patch({"calc/ops.py": OPS.replace("a - b", "a + b")})

    def patch(self, edits: dict[str, str]) -> str:
        self.n += 1
        return make_patch(self.repo, edits, self.root / f"scratch{self.n}")

    def verdict(self, backend, patch: str, config: VerifyConfig | None = None):
        self.n += 1
        rollout = Rollout(run_id="r", task_id=self.task.task_id, index=self.n, status="submitted", patch=patch)
        config = config or VerifyConfig(dedupe=False)
        return TestVerifier(backend, config).verify(self.task, rollout, "grade")


@pytest.fixture
def installed(tmp_path, monkeypatch) -> Path:
    """The probe plugin installed in a directory on the test process's PYTHONPATH."""
    site = tmp_path / "site"
    for name, text in {"agentbon_probe_plugin.py": PLUGIN, **DIST}.items():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        (site / name).write_text(text)
    monkeypatch.setenv("PYTHONPATH", str(site))
    return site


@pytest.fixture
def clones(tmp_path) -> CloneBackend:
    return CloneBackend(tmp_path / "sandboxes")


def test_installed_plugin_does_not_load_by_default(tmp_path, installed, clones):
    work = PluginTask(tmp_path / "t")
    verdict = work.verdict(clones, work.gold)
    assert verdict.status == "fail" and "fixture 'probe' not found" in verdict.log


@pytest.mark.parametrize("name", ["agentbon_probe", "agentbon_probe_plugin"])  # entry-point name, module name
def test_task_names_the_plugin(tmp_path, installed, clones, name):
    work = PluginTask(tmp_path / "t", pytest_plugins=[name])
    assert work.verdict(clones, work.gold).status == "pass", work.verdict(clones, work.gold).log
    assert work.verdict(clones, work.patch({"README.md": "no fix\n"})).status == "fail"


def test_run_config_names_the_plugin_for_every_task(tmp_path, installed, clones):
    work = PluginTask(tmp_path / "t")
    verdict = work.verdict(clones, work.gold, VerifyConfig(dedupe=False, pytest_plugins=["agentbon_probe"]))
    assert verdict.status == "pass", verdict.log


def test_autoload_per_task_and_the_run_overrides_it(tmp_path, installed, clones):
    work = PluginTask(tmp_path / "t", pytest_plugin_autoload=True)
    assert work.verdict(clones, work.gold).status == "pass"
    # Named as well as autoloaded: loaded once (pytest refuses a plugin registered under two names).
    both = VerifyConfig(dedupe=False, pytest_plugins=["agentbon_probe"])
    assert work.verdict(clones, work.gold, both).status == "pass"
    forced_off = VerifyConfig(dedupe=False, pytest_plugin_autoload=False)
    assert work.verdict(clones, work.gold, forced_off).status == "fail"
    plain = PluginTask(tmp_path / "u")
    assert plain.verdict(clones, plain.gold, VerifyConfig(dedupe=False, pytest_plugin_autoload=True)).status == "pass"


def test_candidate_module_cannot_stand_in_for_a_named_plugin(tmp_path, installed, clones):
    # The candidate adds a module with the plugin's name at the repository root (first on sys.path in pytest):
    # the installed plugin was imported before the repository was on the path, so the forger never loads.
    work = PluginTask(tmp_path / "t", pytest_plugins=["agentbon_probe"])
    verdict = work.verdict(clones, work.patch({"agentbon_probe_plugin.py": FORGER}))
    assert verdict.status == "fail", verdict.reason


def test_candidate_package_metadata_registering_a_plugin_is_undone(tmp_path, installed, clones):
    # With autoload on, a *.dist-info in the repository would register the candidate's forger as a plugin.
    work = PluginTask(tmp_path / "t", pytest_plugin_autoload=True)
    planted = {
        "calc/forge.py": FORGER.replace("def probe", "def unused"),
        "evil-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n",
        "evil-1.0.dist-info/entry_points.txt": "[pytest11]\nevil = calc.forge\n",
    }
    verdict = work.verdict(clones, work.patch(planted))
    assert verdict.status == "fail", verdict.reason
    assert sorted(verdict.tampered) == ["evil-1.0.dist-info/METADATA", "evil-1.0.dist-info/entry_points.txt"]


def test_bad_plugin_name_is_a_clear_error():
    with pytest.raises(ValueError, match="pytest_plugins"):
        TestSet(command="true", pytest_plugins=["x; rm -rf /"])


@pytest.mark.docker
def test_named_plugin_in_a_docker_sandbox(tmp_path, docker_backend):
    # Installed into the task image's site-packages; the image's pytest (Debian's, < 8.4) cannot load an
    # entry-point name with -p by itself: the runner turns it into the module.
    purelib = "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"])')"
    setup = [f"d={purelib} && mkdir -p $d/agentbon_probe-1.0.dist-info"]
    setup += [f"printf %s {shlex.quote(text)} > {purelib}/{name}" for name, text in DIST.items()]
    setup.append(f"printf %s {shlex.quote(PLUGIN)} > {purelib}/agentbon_probe_plugin.py")
    work = PluginTask(tmp_path / "t", setup=setup)
    assert work.verdict(docker_backend, work.gold).status == "fail"  # installed, not loaded
    named = VerifyConfig(dedupe=False, pytest_plugins=["agentbon_probe"])
    verdict = work.verdict(docker_backend, work.gold, named)
    assert verdict.status == "pass", verdict.log
