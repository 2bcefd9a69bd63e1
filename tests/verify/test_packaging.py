"""A non-editable wheel carries the verifier scripts, and an installed agentbon finds them there."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("agentbon", "verifiers", "pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "NOTICE")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """A wheel built from a copy of the source tree (the shared checkout is left without build output)."""
    tree = tmp_path_factory.mktemp("src")
    junk = shutil.ignore_patterns("__pycache__", "*.py[cod]", "*.egg-info")
    for name in SOURCES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, tree / name, ignore=junk)
        elif source.exists():
            shutil.copy2(source, tree / name)
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: the installed setuptools builds it, offline.
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation", "-q", "-w", str(out)],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return next(out.glob("agentbon-*.whl"))


def test_wheel_carries_every_verifier_file_byte_for_byte(wheel):
    shipped = sorted(p for p in (ROOT / "verifiers").rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    assert any(p.name == "agentbon_supervise.py" for p in shipped) and any(p.suffix == ".md" for p in shipped)
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for path in shipped:
            member = "agentbon/_verifiers/" + path.relative_to(ROOT / "verifiers").as_posix()
            assert member in names, f"{member} missing from {wheel.name}"
            assert archive.read(member) == path.read_bytes()
        assert not any("__pycache__" in n for n in names if n.startswith("agentbon/_verifiers/"))


def test_installed_package_finds_its_shipped_verifiers(wheel, tmp_path):
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)  # a wheel's purelib unpacked is what pip installs
    probe = (
        "import agentbon; from agentbon.verify import verifiers_dir; from agentbon.critic.judge import default_template;"
        "assert '{patch}' in default_template(); print(agentbon.__file__); print(verifiers_dir())"
    )
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    found = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    module, scripts = found.stdout.split()
    assert Path(module).is_relative_to(site), "the unpacked wheel was not the agentbon imported"
    assert Path(scripts) == site / "agentbon" / "_verifiers"
    assert (Path(scripts) / "run_pytest.py").is_file() and (Path(scripts) / "critic" / "judge.md").is_file()
