"""Build demo task folders from recipes: a reproducible git history, the bundle, the patches and task.yaml.

    python tasks/authoring/build_demo.py                 # every recipe under tasks/authoring/recipes
    python tasks/authoring/build_demo.py demo-a-envfile  # one

A recipe is a folder ``recipes/<task_id>/`` holding ``recipe.yaml`` (task fields and the commit list),
``commits/<n>/`` (files written by commit n, on top of commit n-1), ``gold/`` (the fixed files) and
``hidden/`` (the hidden tests, new or changed). Authors and dates are fixed per commit, so the shas are
the same on every machine. The tests decide the lists in task.yaml: PASS_TO_PASS are the tests that
pass at base and after the fix, FAIL_TO_PASS those that fail at base (with the hidden tests added) and
pass after the fix; the build stops if anything else happens (a visible test failing at base, a hidden
test passing at base, any test failing after the fix).

A ``kind: migration`` recipe has no ``hidden/``: the repository's own tests are evidence and grade, FAIL_TO_PASS are those failing at base, and there is no test patch. ``indent_lists: true``
writes task.yaml's lists indented under their key (the ported demo-b-*/demo-migrate-* tasks). A commit
may list files to ``delete``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml


class BuildError(Exception):
    """A recipe that does not make a sound task (the message says why)."""


HERE = Path(__file__).resolve().parent
SUITE = HERE.parent / "demo"


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in ``repo`` with no user or system config in the way; its stdout."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    base.update({"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, **(env or {})})
    done = subprocess.run(["git", *args], cwd=repo, env=base, capture_output=True, text=True)
    if done.returncode:
        raise BuildError(f"git {' '.join(args)} failed in {repo}:\n{done.stderr}")
    return done.stdout


def overlay(src: Path, dest: Path) -> None:
    """Copy every file under ``src`` into ``dest`` (mode 0644: git records modes, keep them fixed)."""
    for file in sorted(p for p in src.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        target = dest / file.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(file.read_bytes())
        target.chmod(0o644)


def _pytest(repo: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, "tests"]
    return subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True).stdout


def run_tests(repo: Path) -> dict[str, str]:
    """PASSED or FAILED for every test in ``repo`` by node id (ids from --collect-only, so spaces are safe)."""
    collected = [line for line in _pytest(repo, "--collect-only", "-q").splitlines() if "::" in line]
    passed = {line[len("PASSED ") :] for line in _pytest(repo, "-rA", "-q").splitlines() if line.startswith("PASSED ")}
    if not collected:
        raise BuildError(f"no tests collected in {repo}")
    return {test: "PASSED" if test in passed else "FAILED" for test in collected}


def diff_of(repo: Path, files: Path, base: str) -> str:
    """The diff that turns ``base`` into ``base`` + the files under ``files``; the worktree is reset after."""
    overlay(files, repo)
    git(repo, "add", "-A")
    patch = git(repo, "diff", "--cached", "--no-color", "--no-ext-diff", base)
    git(repo, "reset", "-q", "--hard", base)
    return patch


class _Literal(str):
    """A string written as a YAML block scalar."""


def _dump_yaml(data: dict, indent_lists: bool = False) -> str:
    class Dumper(yaml.SafeDumper):
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            # indent_lists: "key:\n    - item" (the ported demo-b/migrate task.yaml files) instead of "key:\n  - item"
            return super().increase_indent(flow, indentless and not indent_lists)

    Dumper.add_representer(_Literal, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|"))
    return yaml.dump(data, Dumper=Dumper, sort_keys=False, width=120, allow_unicode=True)


def make_history(recipe_dir: Path, repo: Path) -> str:
    """Commit the recipe's history into the empty folder ``repo``; the base commit's sha."""
    recipe = yaml.safe_load((recipe_dir / "recipe.yaml").read_text())
    git(repo, "init", "-q", "-b", "main")
    for n, commit in enumerate(recipe["commits"], start=1):
        overlay(recipe_dir / "commits" / str(n), repo)
        for gone in commit.get("delete", []):
            (repo / gone).unlink()
        name, email = re.fullmatch(r"(.+) <(.+)>", commit["author"]).groups()
        when = str(commit["date"])
        who = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": when}
        who |= {"GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email, "GIT_COMMITTER_DATE": when}
        git(repo, "add", "-A")
        git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "-m", commit["message"].strip(), env=who)
    return git(repo, "rev-parse", "HEAD").strip()


def make_patches(recipe_dir: Path, repo: Path, base: str) -> tuple[str, str]:
    """The hidden-test patch (empty for a recipe without ``hidden/``: a migration) and the gold patch, against ``base``."""
    hidden = recipe_dir / "hidden"
    test_patch = diff_of(repo, hidden, base) if hidden.is_dir() else ""
    return test_patch, diff_of(repo, recipe_dir / "gold", base)


def _bugfix_lists(task_id: str, recipe_dir: Path, repo: Path) -> tuple[dict, dict, dict]:
    """Test outcomes at base (visible only), at base with the hidden tests, and with the fix too."""
    visible = run_tests(repo)
    if any(v != "PASSED" for v in visible.values()):
        raise BuildError(f"{task_id}: visible tests must pass at base: {visible}")
    overlay(recipe_dir / "hidden", repo)
    before = run_tests(repo)
    overlay(recipe_dir / "gold", repo)
    return visible, before, run_tests(repo)


def _migration_lists(task_id: str, recipe_dir: Path, repo: Path) -> tuple[dict, dict, dict]:
    """Test outcomes at base and with the fix; the repository's own tests are evidence and grade alike."""
    before = run_tests(repo)
    overlay(recipe_dir / "gold", repo)
    after = run_tests(repo)
    if set(after) != set(before):
        raise BuildError(f"{task_id}: a migration's fix must keep the same tests: {sorted(set(after) ^ set(before))}")
    return {}, before, after


def build(recipe_dir: Path, out_root: Path = SUITE) -> str:
    """Build one task folder from its recipe; the base commit's sha.

    A ``kind: migration`` recipe has no ``hidden/``: no test patch, the tests failing at base are FAIL_TO_PASS,
    and evidence_is_grade is true.
    """
    recipe = yaml.safe_load((recipe_dir / "recipe.yaml").read_text())
    task_id = recipe["task_id"]
    migration = recipe.get("kind", "bugfix") == "migration"
    if migration == (recipe_dir / "hidden").is_dir():
        raise BuildError(f"{task_id}: a recipe has hidden/ exactly when it is not kind: migration")
    out = out_root / task_id
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        base = make_history(recipe_dir, repo)
        test_patch, gold_patch = make_patches(recipe_dir, repo, base)
        visible, before, after = (_migration_lists if migration else _bugfix_lists)(task_id, recipe_dir, repo)
        git(repo, "reset", "-q", "--hard", base)
        git(repo, "clean", "-q", "-fdx")
        if any(v != "PASSED" for v in after.values()):
            raise BuildError(f"{task_id}: every test must pass with the fix: {after}")
        fail_to_pass = [t for t in after if before.get(t) != "PASSED"]
        pass_to_pass = [t for t in after if before.get(t) == "PASSED"]
        if not fail_to_pass or set(visible) - set(pass_to_pass):
            raise BuildError(f"{task_id}: need tests failing at base and every visible test kept: {before}")

        out.mkdir(parents=True, exist_ok=True)
        for stale in out.glob("*"):
            stale.unlink()
        git(repo, "bundle", "create", "-q", str(out / "repo.bundle"), "--all")
    (out / "gold.patch").write_text(gold_patch)
    grade = {"runner": "pytest", "fail_to_pass": fail_to_pass, "pass_to_pass": pass_to_pass}
    spec = {
        "task_id": task_id,
        "kind": recipe.get("kind", "bugfix"),
        "difficulty": recipe["difficulty"],
        "problem_statement": _Literal(recipe["problem_statement"].strip() + "\n"),
        "repo": {"url": "repo.bundle", "base_commit": base},
        "environment": {"python_packages": []},
    }
    if not migration:
        (out / "test.patch").write_text(test_patch)
        spec["evidence"] = {"runner": "pytest", "pass_to_pass": list(visible)}
        grade["patch_file"] = "test.patch"
    spec |= {"grade": grade, "gold_patch_file": "gold.patch", "evidence_is_grade": migration}
    (out / "task.yaml").write_text(_dump_yaml(spec, indent_lists=recipe.get("indent_lists", False)))
    print(
        f"{task_id}: base {base}, {len(visible)} visible, {len(pass_to_pass)} PASS_TO_PASS, FAIL_TO_PASS {fail_to_pass}"
    )
    return base


def main(names: list[str]) -> None:
    recipes = sorted(p for p in (HERE / "recipes").iterdir() if (p / "recipe.yaml").is_file())
    for recipe_dir in recipes:
        if not names or recipe_dir.name in names:
            build(recipe_dir)


if __name__ == "__main__":
    try:
        main(sys.argv[1:])
    except BuildError as err:
        sys.exit(str(err))
