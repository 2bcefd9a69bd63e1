"""Nightly compare on hand-built nights: a task without a result (every rollout an infra error, or never run to its
grade and selection in an interrupted night) is listed apart, never as newly failing; and docs/usage.md's nightly
script, run as written, gives a night that exits 3 its compare and its export."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import git
from synth import make_repo, make_run
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.report.nightly import changes_table

ROOT = Path(__file__).resolve().parents[2]
# Last night every task was solved. Tonight: s solved again, f failed (its one rollout, not one graded before), i only infra errors, r never started,
# g ran but was not graded, h was graded but the night ended before its selection; j had only infra errors last
# night and is solved tonight.
LAST = {"s": "PF", "f": "PF", "i": "PF", "r": "PF", "g": "PF", "h": "PF", "j": "II"}
TONIGHT = {"s": "PF", "f": ".F", "i": "II", "r": "..", "g": "UU", "h": "PF", "j": "PF"}
SELECTED_LAST = {t: [1.0, 0.0] for t in LAST if t != "j"}
SELECTED_TONIGHT = {"s": [1.0, 0.0], "f": [0.0, 1.0], "j": [1.0, 0.0]}
EXPECTED = {  # task: (A, B, change), by hand
    "f": ("solved (1/2 pass)", "unsolved (0/1 pass)", "newly failing"),
    "i": ("solved (1/2 pass)", "infra (0/0 pass)", "infra"),
    "j": ("infra (0/0 pass)", "solved (1/2 pass)", "infra"),
    "g": ("solved (1/2 pass)", "not run (0/0 pass)", "not run"),
    "h": ("solved (1/2 pass)", "not run (1/2 pass)", "not run"),
    "r": ("solved (1/2 pass)", "not run (0/0 pass)", "not run"),
    "s": ("solved (1/2 pass)", "solved (1/2 pass)", "still solved"),
}


def nights(root: Path, repo: tuple[str, Path] | None = None):
    last = make_run(root, LAST, {"tests": SELECTED_LAST}, run_id="nightly-2026-01-01", repo=repo)
    tonight = make_run(root, TONIGHT, {"tests": SELECTED_TONIGHT}, run_id="nightly-2026-01-02", repo=repo)
    return last, tonight


def test_infra_and_not_run_are_listed_apart_and_never_newly_failing(tmp_path):
    last, tonight = nights(tmp_path)
    table = changes_table(last, tonight, "tests", "tests")
    got = {row[0]: (row[2], row[3], row[4]) for row in table.rows}
    assert got == EXPECTED
    assert [row[0] for row in table.rows] == ["f", "i", "j", "g", "h", "r", "s"]  # most urgent first
    assert table.notes[0] == "1 newly failing, 2 infra, 3 not run, 1 still solved"


def test_a_night_that_selected_nothing_reads_as_not_run(tmp_path):
    """Interrupted before any selection: the summary names no primary selector, the run's config still does."""
    last = make_run(tmp_path, {"a": "PF"}, {"tests": {"a": [1.0, 0.0]}}, run_id="a")
    tonight = make_run(tmp_path, {"a": ".F"}, {}, run_id="b", oracle=False)
    table = changes_table(last, tonight, "tests", None)
    assert [row[4] for row in table.rows] == ["not run"]


def test_the_compare_command_lists_them_apart(tmp_path):
    last, tonight = nights(tmp_path)
    out = tmp_path / "cmp"
    result = CliRunner().invoke(app, ["report", "--compare", str(last.path), str(tonight.path), "-o", str(out)],
                                env={"COLUMNS": "250"})  # fmt: skip
    assert result.exit_code == 0, result.output
    md = (out / "compare.md").read_text()
    for task, (a, b, change) in EXPECTED.items():
        assert f"| {task} | no-repo | {a} | {b} | {change} |" in md
    assert "B: 3 task(s) without a sample" in md  # the headline figures of tonight leave them out


def readme_script() -> str:
    """The nightly script of docs/usage.md, as a user copies it."""
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "docs" / "usage.md").read_text(), re.S)
    return next(b for b in blocks if "--compare runs/nightly-" in b and "#!/bin/bash" in b)


def test_the_readme_nightly_script_compares_and_exports_a_night_that_exits_3(tmp_path):
    """``agentbon run`` stands in as a night that ends with infrastructure errors left (exit 3), ``date`` as the
    second of January; everything after them is the real CLI on the hand-built nights."""
    home, stage, bin_dir = tmp_path / "srv" / "agentbon", tmp_path / "stage", tmp_path / "bin"
    billing = make_repo(tmp_path / "mirrors" / "billing", list(LAST))
    make_repo(tmp_path / "mirrors" / "ledger", ["other"])
    last, _ = nights(stage, repo=billing)
    (home / "runs").mkdir(parents=True)
    os.rename(last.path, home / "runs" / last.path.name)  # last night's run is in place; tonight's is made by `run`
    bin_dir.mkdir()
    (bin_dir / "agentbon").write_text(
        '#!/bin/bash\nif [ "$1" = run ]; then\n  while [ $# -gt 0 ]; do [ "$1" = --run-id ] && id=$2; shift; done\n'
        '  cp -r "$STAGE/$id" "runs/$id"; echo "infrastructure errors left"; exit 3\nfi\n'
        'exec "$PYTHON" -m agentbon "$@"\n'
    )
    (bin_dir / "date").write_text('#!/bin/bash\ncase "$*" in *yesterday*) echo 2026-01-01;; *) echo 2026-01-02;; esac\n')
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)
    script = readme_script().replace("/srv/agentbon", str(home)).replace("/srv/mirrors", str(tmp_path / "mirrors"))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHON": sys.executable, "STAGE": str(stage),
           "PYTHONPATH": str(ROOT), "COLUMNS": "250"}  # fmt: skip
    done = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 3, done.stdout + done.stderr  # the night's own status, for the scheduler
    md = (home / "runs" / "nightly-2026-01-02" / "compare" / "compare.md").read_text()
    assert "| i | billing | solved (1/2 pass) | infra (0/0 pass) | infra |" in md
    assert "| r | billing | solved (1/2 pass) | not run (0/0 pass) | not run |" in md
    branches = {b.name for b in git.Repo(billing[1]).branches}
    assert {"agentbon/nightly-2026-01-02/s", "agentbon/nightly-2026-01-02/j"} <= branches, done.stdout
