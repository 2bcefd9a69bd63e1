"""Build hook: the wheel carries the top-level ``verifiers/`` folder as ``agentbon/_verifiers``.

``verifiers/`` stays where design.md puts it (beside the package, the scripts that run inside sandboxes);
``agentbon.verify.verifiers_dir()`` finds the shipped copy in an installed package and this folder in a
source tree. All other metadata is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = {"verifiers": "agentbon/_verifiers"}
"""Top-level folder -> where it lands inside the built package."""


class BuildPyWithData(build_py):
    """``build_py`` that also copies the top-level data folders into the build (not for editable installs)."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the source tree
        root = Path(__file__).resolve().parent
        for source, target in SHIPPED.items():
            dest = Path(self.build_lib) / target
            shutil.rmtree(dest, ignore_errors=True)
            shutil.copytree(root / source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.py[cod]"))


setup(cmdclass={"build_py": BuildPyWithData})
