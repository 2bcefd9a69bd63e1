"""Localisation without a model: ranking, test files, imports, line windows, the tree."""

from __future__ import annotations

from pathlib import Path

from agentbon.agent.localise import imported, is_test_path, keywords, localise, tree, window
from agentbon.config import AgentConfig
from agentbon.testing import FakeSandbox, init_repo

FILLER = "\n".join(f"def helper_{i}(x):\n    return x + {i}\n" for i in range(200))

REPO = {
    "pkg/__init__.py": "",
    "pkg/dates.py": "from .fmt import pad\n\n" + FILLER + "\n\ndef parse_date(text):\n    y, m, d = text.split('-')\n"
    "    return int(y), int(m), int(d)\n",
    "pkg/fmt.py": "def pad(n):\n    return str(n).zfill(2)\n",
    "pkg/other.py": "def unrelated():\n    return 'date'\n",
    "pkg/cli.py": "import sys\n\ndef main():\n    print(sys.argv)\n",
    "tests/test_dates.py": "from pkg.dates import parse_date\n\ndef test_parse_date():\n    parse_date('2020-01-02')\n",
    "web/app.js": "const fmt = require('./lib/fmt');\nimport x from '../pkg/none';\n",
    "web/lib/fmt.js": "module.exports = {};\n",
    "logo.png": "not really a png",
}


def box(tmp_path, files=REPO):
    path = tmp_path / "r"
    init_repo(path, files)
    return FakeSandbox(path)


def test_keywords_prefer_code_like_identifiers():
    words = keywords("Calling `parse_date('2020-1-2')` raises ValueError when the month has one digit; see DateParser.")
    assert set(list(words)[:3]) == {"parse_date", "ValueError", "DateParser"}
    assert words["parse_date"] == 2.0 and words.get("month") == 1.0
    assert "the" not in words and "when" not in words


def test_test_paths():
    assert all(map(is_test_path, ["tests/a.py", "pkg/test_x.py", "x_test.go", "src/a.spec.ts", "conftest.py", "e2e/a.py"]))
    assert not any(map(is_test_path, ["pkg/dates.py", "contest.py", "attest/a.py", "testing_utils.py"]))


def test_ranking_puts_the_defining_file_first_and_leaves_tests_out(tmp_path):
    ctx = localise(box(tmp_path), "parse_date fails on single-digit months", AgentConfig(max_context_files=3))
    shown = [f.path for f in ctx.shown]
    assert shown[0] == "pkg/dates.py"
    assert "pkg/fmt.py" in shown  # imported by the best file
    assert "tests/test_dates.py" not in shown and "logo.png" not in shown
    assert "pkg/cli.py" not in shown  # nothing points at it


def test_test_files_are_shown_when_the_problem_names_them(tmp_path):
    ctx = localise(box(tmp_path), "tests/test_dates.py should also cover parse_date with months", AgentConfig())
    assert "tests/test_dates.py" in [f.path for f in ctx.shown]


def test_a_long_file_is_shown_as_its_best_window(tmp_path):
    ctx = localise(box(tmp_path), "parse_date is wrong", AgentConfig(max_context_files=1, max_file_lines=30))
    (dates,) = ctx.shown
    assert dates.total > 400 and dates.end - dates.start + 1 == 30
    assert "def parse_date(text):" in dates.text and dates.end == dates.total  # the body too, to the end


def test_the_line_budget_is_shared_in_rank_order(tmp_path):
    ctx = localise(box(tmp_path), "parse_date and pad", AgentConfig(max_file_lines=200, context_lines=210))
    first, *rest = ctx.shown
    assert first.path == "pkg/dates.py" and first.end - first.start + 1 == 200
    assert rest and all(f.end - f.start + 1 == f.total for f in rest)  # what is left goes to files that fit whole
    assert sum(f.end - f.start + 1 for f in ctx.shown) <= 210


def test_localisation_leaves_nothing_behind(tmp_path, monkeypatch):
    import uuid

    import agentbon.agent.localise as module

    # The fake's /tmp is the host's, where other tests (another pytest-xdist worker's) localise at the same time:
    # this call's scratch files get a name of their own, and only those are looked for.
    mine = uuid.uuid4()
    monkeypatch.setattr(module.uuid, "uuid4", lambda: mine)
    sandbox = box(tmp_path)
    localise(sandbox, "parse_date", AgentConfig())
    assert sandbox.diff() == ""
    assert not list(Path("/tmp").glob(f".agentbon-localise-{mine.hex[:12]}*"))


def test_listed_paths_that_cannot_be_read_are_skipped(tmp_path):
    sandbox = box(tmp_path)
    sandbox.exec("rm pkg/fmt.py && rm -r pkg/other.py && mkdir pkg/other.py")  # deleted; a directory (submodule)
    ctx = localise(sandbox, "parse_date pad unrelated in pkg/other.py", AgentConfig())
    shown = [f.path for f in ctx.shown]
    assert "pkg/dates.py" in shown and "pkg/fmt.py" not in shown and "pkg/other.py" not in shown


def test_imports_resolve_python_and_javascript():
    files = set(REPO)
    assert imported("pkg/dates.py", REPO["pkg/dates.py"], files) == ["pkg/fmt.py"]
    assert imported("tests/test_dates.py", REPO["tests/test_dates.py"], files) == ["pkg/dates.py"]
    assert imported("web/app.js", REPO["web/app.js"], files) == ["web/lib/fmt.js"]
    assert imported("pkg/cli.py", "from . import (fmt,\n  other)\nfrom .. import nothing\n", files) == [
        "pkg/__init__.py",
        "pkg/fmt.py",
    ]


def test_window_picks_the_densest_lines():
    lines = ["x"] * 50 + ["parse_date here", "parse_date again"] + ["y"] * 50
    assert window(lines, {"parse_date": 2.0}, 10) == (45, 55)  # centred on the matches
    assert window(lines, {"parse_date": 2.0}, 200) == (0, 102)
    assert window(["parse_date"] + ["x"] * 30, {"parse_date": 1.0}, 10) == (0, 10)


def test_tree_summarises_big_repositories():
    files = [f"d{i}/f{j}.py" for i in range(10) for j in range(30)]
    text = tree(files, ["d3/f1.py"], limit=100)
    assert "d0/ (30 files)" in text and "d3/f29.py" in text and "d4/f1.py" not in text
    assert tree(["a.py", "b/c.py"], []) == "a.py\nb/c.py"


def test_prose_ranks_below_code_unless_named(tmp_path):
    files = {**REPO, "README.md": "parse_date parses a date. parse_date is great. Use parse_date.\n"}
    ctx = localise(box(tmp_path, files), "parse_date breaks", AgentConfig(max_context_files=2))
    assert [f.path for f in ctx.shown][0] == "pkg/dates.py" and ctx.scores.get("README.md", 0) < ctx.scores[
        "pkg/dates.py"
    ]
    ctx = localise(box(tmp_path / "b", files), "README.md says parse_date breaks", AgentConfig(max_context_files=2))
    assert "README.md" in [f.path for f in ctx.shown]
