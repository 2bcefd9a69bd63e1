"""The demo task folders built from recipes match their recipes (same shas, same patches), on any machine."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from agentbon.tasks import load_task

AUTHORING = Path(__file__).resolve().parents[2] / "tasks" / "authoring"
RECIPES = sorted(p for p in (AUTHORING / "recipes").glob("*") if (p / "recipe.yaml").is_file())


def builder():
    spec = importlib.util.spec_from_file_location("build_demo", AUTHORING / "build_demo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("recipe", RECIPES, ids=[p.name for p in RECIPES])
def test_recipe_rebuilds_the_committed_task(recipe: Path, tmp_path: Path):
    build = builder()
    task = load_task(build.SUITE / recipe.name)
    repo = tmp_path / "repo"
    repo.mkdir()
    base = build.make_history(recipe, repo)
    assert base == task.repo.base_commit, "rebuild with: python tasks/authoring/build_demo.py " + recipe.name
    test_patch, gold_patch = build.make_patches(recipe, repo, base)
    assert test_patch == task.grade.patch
    assert gold_patch == task.gold_patch
