"""The parse stage's pure core: its shell step's output read back, and what leaves it undecided."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from agentbon.verify import parsecheck
from agentbon.verify.parsecheck import MARK, Parsed, read


def run_step(tmp_path: Path, files: dict[str, str], listed: list[tuple[str, str]], path: str | None = None) -> str:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    (tmp_path / "changed").write_bytes(b"".join(f"{s}\0{p}\0".encode() for s, p in listed))
    env = {"PATH": path} if path is not None else None
    ran = subprocess.run(
        ["/bin/bash", "-c", parsecheck.script(str(tmp_path / "changed"))],
        cwd=tmp_path, capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr  # never fails the apply step it is chained to
    return ran.stdout


def test_added_and_modified_python_files_are_compiled_deleted_and_other_files_are_not(tmp_path):
    out = run_step(
        tmp_path,
        {"pkg/good.py": "x = 1\n", "pkg/bad.py": "def f(:\n", "notes.txt": "def f(:\n", "gone.py": "("},
        [("M", "pkg/good.py"), ("A", "pkg/bad.py"), ("M", "notes.txt"), ("D", "gone.py")],
    )
    parsed = read(out)
    assert parsed.parses is False and [e.split(":")[:2] for e in parsed.errors] == [["pkg/bad.py", "1"]]
    assert read(run_step(tmp_path, {}, [("M", "pkg/good.py")])) == Parsed(parses=True)


def test_code_is_compiled_never_run(tmp_path):
    marker = tmp_path / "ran"
    out = run_step(tmp_path, {"boom.py": f"open({str(marker)!r}, 'w')\n"}, [("A", "boom.py")])
    assert read(out).parses is True and not marker.exists()


def test_a_test_file_the_guard_undoes_does_not_count_against_the_candidate():
    out = f'{MARK}2:[{{"path": "tests/test_x.py", "line": 3, "error": "invalid syntax"}}]'
    assert read(out, ignore=frozenset({"tests/test_x.py"})) == Parsed(parses=True)
    assert read(out).errors == ["tests/test_x.py:3: invalid syntax"]


def test_undecided_where_nothing_was_checked_or_the_output_says_nothing(tmp_path):
    assert read(run_step(tmp_path, {"a.txt": ""}, [("M", "a.txt")])) == Parsed()  # no Python file changed
    assert read(run_step(tmp_path, {"a.py": "("}, [("A", "a.py")], path="/nonexistent")) == Parsed()  # no python3
    assert read("") == read(f"{MARK}x:[]") == read(f"{MARK}1:not json") == read(f"{MARK}1:{{}}") == Parsed()
    # The check's line is the last of the apply step's output, after whatever the apply printed.
    assert read(f"Checking patch a.py...\n{MARK}1:[]").parses is True


def test_a_huge_file_is_not_compiled_and_cannot_stretch_the_apply_step(tmp_path):
    big = "x = 1\n" * (parsecheck.MAX_FILE_BYTES // 6 + 1) + "def f(:\n"  # over the limit, and broken at the end
    out = run_step(tmp_path, {"huge.py": big, "ok.py": "y = 2\n"}, [("A", "huge.py"), ("A", "ok.py")])
    assert read(out) == Parsed(parses=True)  # listed, left unread: only ok.py was compiled


def test_a_check_stopped_at_its_time_limit_reads_undecided(tmp_path, monkeypatch):
    monkeypatch.setattr(parsecheck, "TIME_LIMIT_S", 1)
    os.mkfifo(tmp_path / "stuck.py")  # opening it blocks until a writer comes: none will
    out = run_step(tmp_path, {"a.py": "("}, [("A", "a.py"), ("A", "stuck.py")])
    assert read(out) == Parsed()
