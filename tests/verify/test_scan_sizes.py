"""The static scan's size and binary checks: large files, binary patches, NUL bytes, encoded blobs, bounded cost."""

import os
import subprocess
from pathlib import Path

from scan_patches import edit, new_file
from verify_task import GIT_ENV

from agentbon.verify import scan
from agentbon.verify.scan import scan_patch


def git_diff(tmp_path: Path, files: dict[str, bytes], then: dict[str, bytes | None]) -> str:
    """``git diff --binary`` of a real repository from ``files`` to ``then`` (None deletes)."""
    repo = tmp_path / "repo"
    repo.mkdir()

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    for name, data in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_bytes(data)
    git("add", "-A")
    git("commit", "-q", "-m", "base", "--allow-empty")
    for name, data in then.items():
        if data is None:
            (repo / name).unlink()
        else:
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_bytes(data)
    git("add", "-A")
    return git("diff", "--cached", "--binary", "HEAD")


def kinds(flags):
    return sorted(f.kind for f in flags)


def test_new_text_file_over_the_limit():
    flags = scan_patch(new_file("calc/table.txt", "row\n" * 400), max_file_bytes=1000)
    assert kinds(flags) == ["large_file"] and flags[0].paths == ["calc/table.txt"]
    assert "adds 1600 bytes" in flags[0].detail
    assert scan_patch(new_file("calc/table.txt", "row\n" * 200), max_file_bytes=1000) == []


def test_file_that_grows_by_more_than_the_limit():
    patch = edit("calc/ops.py", 3, ["x = 1"], [], [f"y{i} = {i}" for i in range(300)], [""])
    flags = scan_patch(patch, max_file_bytes=1000)
    assert kinds(flags) == ["large_file"] and "grows by" in flags[0].detail


def test_binary_literal_is_binary_and_its_stated_size_counts(tmp_path):
    blob = os.urandom(5000)
    patch = git_diff(tmp_path, {"README": b"x\n"}, {"calc/blob.bin": blob})
    assert "GIT binary patch" in patch
    flags = scan_patch(patch, max_file_bytes=4096)
    assert kinds(flags) == ["binary", "large_file"]
    assert all(f.paths == ["calc/blob.bin"] for f in flags)
    assert "adds 5000 bytes" in next(f for f in flags if f.kind == "large_file").detail


def test_binary_delta_states_the_new_size(tmp_path):
    old = os.urandom(20000)
    new = old[:10000] + b"changed" + old[10000:]
    patch = git_diff(tmp_path, {"calc/blob.bin": old}, {"calc/blob.bin": new})
    assert "\ndelta " in patch
    flags = scan_patch(patch, max_file_bytes=20003)
    assert kinds(flags) == ["binary", "large_file"]
    assert "grows by 20007 bytes" in next(f for f in flags if f.kind == "large_file").detail
    assert kinds(scan_patch(patch, max_file_bytes=20007)) == ["binary"]


def test_binary_files_differ_and_nul_bytes():
    differ = "diff --git a/calc/x.so b/calc/x.so\nnew file mode 100644\nBinary files /dev/null and b/calc/x.so differ\n"
    nul = new_file("calc/data.py", "DATA = '\0\0\0'\n")
    flags = scan_patch(differ + nul)
    assert kinds(flags) == ["binary"] and flags[0].paths == ["calc/x.so", "calc/data.py"]


def test_encoded_blob_in_a_text_file():
    blob = "QUJD" * 2000
    flags = scan_patch(new_file("calc/payload.py", f"PAYLOAD = '{blob}'\n"))
    assert kinds(flags) == ["binary"] and "encoded blob" in flags[0].detail


def test_deleting_large_or_binary_files_is_not_flagged(tmp_path):
    patch = git_diff(
        tmp_path,
        {"calc/blob.bin": os.urandom(5000), "calc/big.txt": b"row\n" * 2000},
        {
            "calc/blob.bin": None,
            "calc/big.txt": None,
        },
    )
    assert scan_patch(patch, max_file_bytes=1000) == []


def test_a_huge_file_is_flagged_without_reading_it_line_by_line():
    # 39 MB added to one file: flagged large from the section's size; the code scan never reads it.
    lines = 1_000_000
    head = "diff --git a/calc/huge.py b/calc/huge.py\nnew file mode 100644\n--- /dev/null\n+++ b/calc/huge.py\n"
    patch = head + f"@@ -0,0 +1,{lines} @@\n" + ("+import os; os._exit(0)" + " " * 16 + "\n") * lines
    flags = scan_patch(patch)
    assert kinds(flags) == ["large_file"] and flags[0].paths == ["calc/huge.py"]
    assert f"adds {39 * lines} bytes" in flags[0].detail


def test_code_past_the_scan_budget_is_named(monkeypatch):
    monkeypatch.setattr(scan, "SCAN_BUDGET", 100)
    patch = new_file("calc/a.py", "x = 1\n" * 20) + new_file("calc/b.py", "import os\nos._exit(0)\n")
    flags = scan_patch(patch)
    assert kinds(flags) == ["suspicious_code"] and flags[0].detail.startswith("not scanned")
    assert flags[0].paths == ["calc/b.py"]
