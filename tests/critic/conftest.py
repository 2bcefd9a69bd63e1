"""Fixtures for the critic tests: a synthetic run store (see critic_runs.py)."""

import pytest
from critic_runs import make_run


@pytest.fixture
def run_dir(tmp_path):
    return make_run(tmp_path / "run-a").path
