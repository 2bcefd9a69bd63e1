"""Which files a patch touches: git's real output for every kind of change."""

from __future__ import annotations

from pathlib import Path

from agentbon.diffs import files_touched, header_paths, unquote_git_path

FIXTURES = Path(__file__).parent / "fixtures"


def test_every_kind_of_git_change_is_seen():
    # mixed.diff is `git diff --cached -M` of: a new non-ASCII file, a deletion, a binary change, a removed
    # line starting with "--" (must not read as a header), a mode change, a rename, a name with a space.
    patch = (FIXTURES / "mixed.diff").read_text()
    assert files_touched(patch) == [
        "café.py",
        "gone.py",
        "img.bin",
        "keep.sql",
        "mode.sh",
        "old name.txt",
        "new name.txt",
        "with space.py",
    ]


def test_a_removed_sql_comment_is_not_a_file_header():
    patch = "--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n--- drop me\n+++ add me\n ctx\n"
    assert files_touched(patch) == ["q.sql"]


def test_plain_unified_diff_with_timestamps():
    patch = "--- src/x.py\t2024-01-01 00:00:00\n+++ src/x.py\t2024-01-02 00:00:00\n@@ -1 +1 @@\n-a\n+b\n"
    assert files_touched(patch) == ["src/x.py"]


def test_not_a_diff():
    assert files_touched("hello\nworld\n") == []
    assert files_touched("") == []


def test_unquote():
    assert unquote_git_path('"a/caf\\303\\251.py"') == "a/café.py"
    assert unquote_git_path('"tab\\there \\"q\\""') == 'tab\there "q"'
    assert unquote_git_path("plain/path.py") == "plain/path.py"


def test_one_reader_of_git_headers() -> None:
    assert header_paths("a/my file.py b/my file.py") == ("my file.py", "my file.py")  # spaces: split in the middle
    assert header_paths("a/old.py b/new.py\n") == ("old.py", "new.py")  # renamed
    assert header_paths('"a/caf\\303\\251.py" "b/caf\\303\\251.py"') == ("café.py", "café.py")
    assert header_paths('a/x.py "b/tab\\there.py"') == ("x.py", "tab\there.py")  # one side quoted
    assert header_paths("x.py x.py") == ("x.py", "x.py")  # --no-prefix
    assert header_paths("garbage") is None
