"""agentbon applies a SWE-bench candidate as the harness does: both chains run on the same patches and trees.

The harness's chain is ``run_evaluation.run_instance``'s, run here on a host clone: each of its ``GIT_APPLY_CMDS``
in order, the tree reset (``git checkout -- . ; git clean -fd``) before each retry, and ``git apply --check
--reverse`` when none applied. agentbon's is ``harness.apply_script`` (dry runs instead of resets). For each patch
both must agree on whether it applied and, where it did, on every file of the tree.
"""

from __future__ import annotations

import inspect
import os
import subprocess
from pathlib import Path

import pytest

from agentbon.diffs import files_touched
from agentbon.verify import harness
from tests.swebench.support import harness_or_skip

LINES = [f"line {i}\n" for i in range(1, 13)]
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def sh(cwd: Path, command: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=ENV, capture_output=True, text=True)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True, text=True).stdout


def edit(lines: list[str], **changes: str) -> str:
    """The file with ``line<N>=text`` changes (1-based)."""
    out = list(lines)
    for key, text in changes.items():
        out[int(key[4:]) - 1] = text + "\n"
    return "".join(out)


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A repository whose base commit changed line 3 of ``calc.py`` since the commit before; and patches."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text("".join(LINES))
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "older")
    (root / "calc.py").write_text(edit(LINES, line3="LINE 3"))
    git(root, "commit", "-qam", "base")

    def made(at: str, text: str, name: str = "calc.py") -> str:
        git(root, "checkout", "-q", at)
        (root / name).write_text(text)
        git(root, "add", "-A")
        out = git(root, "diff", "--cached", "HEAD")
        git(root, "reset", "-q", "--hard")
        git(root, "checkout", "-q", "main")
        return out

    clean = made("main", edit(LINES, line3="LINE 3", line10="ten"))
    stale_context = "".join(
        " # the candidate's base had this\n" if line == " line 7\n" else line for line in clean.splitlines(True)
    )  # fmt: skip
    patches = {
        "clean": clean,
        "made on the commit before (3-way)": made("HEAD~1", edit(LINES, line6="six")),
        "stale context (fuzz)": stale_context,
        "already in the tree": made("HEAD~1", edit(LINES, line3="LINE 3")),
        "already in the tree, no blob to merge with": "".join(
            line for line in made("HEAD~1", edit(LINES, line3="LINE 3")).splitlines(True) if not line.startswith("index ")
        ),
        "half already in the tree": made("HEAD~1", edit(LINES, line3="LINE 3", line11="eleven")),
        "a file that is not there": "--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n",
        "creates a file that exists": made("main", "new\n", "extra.py").replace("extra.py", "calc.py"),
        "whitespace only": " \n\t\n",
        "context that matches nothing": clean.replace(" line 9\n", " no such line\n").replace(" line 8\n", " nor this\n"),
    }
    return root, patches


def tree(root: Path) -> dict[str, str]:
    """Every file of the working tree but .git, with its text."""
    return {
        str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.parts
    }


def harness_chain(root: Path, patch: Path) -> bool:
    """``run_instance``'s application of a prediction, command for command."""
    from swebench.harness import run_evaluation

    source = inspect.getsource(run_evaluation.run_instance)
    assert '"git checkout -- . ; git clean -fd"' in source and "git apply --check --reverse" in source
    for attempt, command in enumerate(run_evaluation.GIT_APPLY_CMDS):
        if attempt:
            sh(root, "git checkout -- . ; git clean -fd")
        if sh(root, f"{command} {patch}").returncode == 0:
            return True
    return sh(root, f"git apply --check --reverse {patch}").returncode == 0


def agentbon_chain(root: Path, patch: Path, text: str) -> bool:
    paths = patch.with_suffix(".paths")
    paths.write_text("\0".join(files_touched(text)))
    done = sh(root, harness.apply_script(str(patch), str(paths)))
    assert done.returncode in (0, 97), done.stderr
    return done.returncode == 0


def test_the_harness_tries_the_commands_this_chain_mirrors() -> None:
    harness_or_skip()
    from swebench.harness.run_evaluation import GIT_APPLY_CMDS

    assert GIT_APPLY_CMDS == [
        "git apply --verbose", "git apply --verbose --3way", "git apply --verbose --reject",
        "patch --batch --forward --fuzz=5 -p1 -i",
    ]  # fmt: skip


def test_both_chains_apply_the_same_patches_to_the_same_trees(repo, tmp_path: Path) -> None:
    harness_or_skip()
    root, patches = repo
    seen = {}
    for name, text in patches.items():
        patch = tmp_path / f"{len(seen)}.diff"
        patch.write_text(text)
        theirs, ours = tmp_path / f"h{len(seen)}", tmp_path / f"a{len(seen)}"
        for clone in (theirs, ours):
            git(tmp_path, "clone", "-q", str(root), str(clone))
        applied = harness_chain(theirs, patch)
        assert agentbon_chain(ours, patch, text) == applied, name
        if applied:
            assert tree(ours) == tree(theirs), name
        seen[name] = applied
    assert seen == {
        "clean": True, "made on the commit before (3-way)": True, "stale context (fuzz)": True,
        "already in the tree": True, "already in the tree, no blob to merge with": True, "half already in the tree": True, "a file that is not there": False,
        "creates a file that exists": False, "whitespace only": False, "context that matches nothing": True,
    }  # fmt: skip
