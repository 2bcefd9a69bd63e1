"""Free space where the run writes: measured on the real filesystem of a temporary directory."""

from __future__ import annotations

import shutil

from agentbon.config import RunConfig
from agentbon.orchestrate.factories import Factories
from agentbon.preflight import Context
from agentbon.preflight.disk import PER_ROLLOUT, RUN_DIR_FLOOR, check_disk, free_space_problem, run_dir_need
from agentbon.testing import FakeBackend
from tests.preflight.pf_support import make_task


def test_enough_space_is_no_problem(tmp_path):
    assert free_space_problem(tmp_path, 1, "run_dir") is None


def test_too_little_space_names_the_place_and_how_much_is_needed(tmp_path):
    free = shutil.disk_usage(tmp_path).free
    problem = free_space_problem(tmp_path / "runs" / "not-yet", free + (1 << 40), "run_dir")
    assert problem is not None and problem.fatal and problem.check == "disk"
    assert "run_dir" in problem.cause and str(tmp_path) in problem.cause and "GiB" in problem.cause
    assert "free at least" in problem.fix


def test_the_run_dir_need_grows_with_n_times_tasks():
    tasks = [make_task(f"t{i}") for i in range(5)]
    ctx = Context(RunConfig(n=8), tasks)
    assert run_dir_need(ctx) == RUN_DIR_FLOOR + 40 * PER_ROLLOUT


def test_the_disk_check_passes_on_a_healthy_temp_dir(tmp_path):
    config = RunConfig(run_dir=str(tmp_path / "runs"))
    assert check_disk(Context(config, [make_task()], Factories(backend=FakeBackend))) == []
    assert not (tmp_path / "runs").exists()  # measured, never created
