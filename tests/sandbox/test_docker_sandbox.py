"""Docker sandboxes against the real engine: commands, runaway commands contained, files, the patch, gone containers."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
from sbx_repo import FUTURE_MARKER, GOLD_MARKER, HIDDEN_MARKER, git

from agentbon.errors import PatchError, SandboxGone
from agentbon.protocols import Sandbox

pytestmark = pytest.mark.docker


def test_sandbox_satisfies_the_protocol(box):
    assert isinstance(box, Sandbox)
    assert box.isolation == "docker" and box.workdir == "/repo"


def test_command_runs_in_the_repo_and_a_failure_is_data(box):
    result = box.exec("pwd && cat pkg/mod.py && git rev-parse HEAD")
    assert result.ok and result.output.startswith("/repo\ndef double")
    assert box.base_commit in result.output
    failed = box.exec("echo to-stderr >&2; exit 3")
    assert (failed.exit_code, failed.timed_out, failed.output) == (3, False, "to-stderr\n")
    assert box.exec("pwd", workdir="pkg").output == "/repo/pkg\n"
    assert box.exec("pwd", workdir="nope").exit_code == 126  # a missing workdir is a failed command too


def test_container_has_labels_limits_and_no_network(box, engine, run_labels, sandbox_config):
    attrs = engine.api.inspect_container(box.id)
    labels, host = attrs["Config"]["Labels"], attrs["HostConfig"]
    assert labels["agentbon"] == "1" and labels["agentbon.run_id"] == run_labels["run_id"]
    assert (labels["agentbon.task_id"], labels["agentbon.rollout_id"], labels["agentbon.purpose"]) == (
        "tiny",
        "tiny/0",
        "test",
    )
    assert host["NetworkMode"] == "none" and host["Init"] is True
    assert host["NanoCpus"] == 1_000_000_000 and host["PidsLimit"] == sandbox_config.pids
    assert host["Memory"] == 256 << 20 and host["MemorySwap"] == 256 << 20
    assert box.exec("ls /sys/class/net").output.split() == ["lo"]


def test_history_shows_no_future_and_no_secret_is_in_the_sandbox(box, tiny_repo):
    assert box.exec(f"git cat-file -e {tiny_repo.future}").exit_code != 0
    assert box.exec(f"git cat-file -e {tiny_repo.first}").ok
    log = box.exec("git log --all --format=%H; git tag; git remote; git stash list; git reflog; git branch -a")
    assert log.output.split() == [tiny_repo.base, tiny_repo.first, "*", "main"]
    secrets = box.exec(
        f"grep -rl -e {GOLD_MARKER} -e {HIDDEN_MARKER} -e {FUTURE_MARKER} / "
        "--exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null; git log --all -p | grep -c MARKER"
    )
    assert secrets.output.strip() == "0"


def test_git_identity_lets_the_agent_commit(box):
    result = box.exec("echo x >> README.md && git commit -qam 'agent commit' && git log -1 --format=%an")
    assert result.ok and result.output == "agentbon\n"


def test_endless_loop_is_stopped_by_the_timeout(box):
    result = box.exec("while :; do :; done", timeout=2)
    assert result.timed_out and result.exit_code == 124
    assert result.duration_s >= 2  # ended by the timeout: the loop never ends by itself
    assert "timed out after 2s" in result.output


def test_command_ignoring_term_is_killed(box):
    count = "ps -e --no-headers | wc -l"
    baseline = int(box.exec(count).output)
    result = box.exec("trap '' TERM; while :; do :; done", timeout=1)
    assert result.timed_out and result.exit_code in (124, 137)
    assert int(box.exec(count).output) == baseline


def test_output_flood_is_capped_head_and_tail(box, sandbox_config):
    result = box.exec("seq 1 2000000")
    assert result.ok and result.truncated
    assert result.output.startswith("1\n2\n3\n") and result.output.endswith("1999999\n2000000\n")
    assert "bytes of output omitted" in result.output
    assert len(result.output) < sandbox_config.output_limit + 100


def test_endless_output_flood_with_timeout(box):
    result = box.exec("yes", timeout=2)
    assert result.timed_out and result.truncated and result.output.startswith("y\ny\n")


def test_fork_bomb_is_contained_by_the_pids_limit(box):
    started = time.monotonic()
    result = box.exec(":(){ :|:& };:; sleep 3; echo still-here", timeout=10)
    assert time.monotonic() - started < 40  # the exec returned
    assert "Resource temporarily unavailable" in result.output  # the bomb hit the pids limit
    after = box.exec("ps -e --no-headers | wc -l")  # the sandbox still works, and the bomb is gone
    assert after.ok and int(after.output) < 10
    assert subprocess.run(["true"]).returncode == 0  # the host can still fork


def test_memory_hog_is_killed_and_reported(box):
    result = box.exec("python3 -c 'x = bytearray(1 << 30); print(len(x))'", timeout=30)
    assert result.exit_code == 137 and not result.timed_out
    assert "out of memory" in result.output
    assert box.exec("echo alive").output == "alive\n"
    again = box.exec("python3 -c 'x = bytearray(1 << 30)'", timeout=30)
    assert "out of memory" in again.output  # counted again, not just once
    assert "out of memory" not in box.exec("kill -9 $$").output  # other kills are not called OOM


def test_background_jobs_end_with_their_command(box):
    result = box.exec("sleep 60 & echo started", timeout=30)
    assert result.ok and result.output == "started\n" and result.duration_s < 30  # not the sleep's 60 s
    assert box.exec("ps -e -o args | grep -c '^sleep 60$' || true").output.strip() == "0"


def test_escaped_background_process_holding_stdout_does_not_hang_exec(box):
    result = box.exec("setsid sleep 60 & echo started", timeout=30)
    assert result.ok and result.output == "started\n" and result.duration_s < 30  # not the sleep's 60 s


def test_files_in_and_out(box, tmp_path):
    box.write_file("notes/new.txt", "hello\n")
    box.write_file("/tmp/abs.bin", bytes(range(256)))
    assert box.read_file("notes/new.txt") == b"hello\n"
    assert box.read_file("/repo/notes/new.txt") == b"hello\n"
    assert box.read_file("/tmp/abs.bin") == bytes(range(256))
    box.exec("printf '#!/bin/sh\\necho old\\n' > run.sh && chmod 755 run.sh && ln -s pkg/mod.py link.py")
    box.write_file("run.sh", "#!/bin/sh\necho new\n")
    assert box.exec("./run.sh").output == "new\n"  # still executable
    assert box.read_file("link.py").startswith(b"def double")
    with pytest.raises(FileNotFoundError):
        box.read_file("missing.txt")
    with pytest.raises(IsADirectoryError):
        box.read_file("pkg")
    (tmp_path / "in" / "sub").mkdir(parents=True)
    (tmp_path / "in" / "sub" / "a.txt").write_text("A")
    box.copy_in(str(tmp_path / "in"), "copied")
    assert box.exec("cat copied/sub/a.txt").output == "A"
    box.copy_out("pkg", str(tmp_path / "out"))
    assert (tmp_path / "out" / "mod.py").read_text().startswith("def double")
    box.copy_out("README.md", str(tmp_path))
    assert (tmp_path / "README.md").read_text() == "tiny package\n"


def test_diff_includes_every_change_and_applies_at_base(box, tiny_repo, tmp_path):
    box.exec("mkdir -p new/dir && echo new > new/dir/file.txt && git rm -q README.md && echo changed >> pkg/mod.py")
    box.write_file("data/blob.bin", bytes(range(255, -1, -1)))
    box.write_file("latin1.txt", "café\n".encode("latin-1"))
    box.write_file("with space.txt", "spaced\n")
    box.exec("python3 -c 'import pkg.mod' && mkdir -p pkg/__pycache__ && touch pkg/__pycache__/mod.cpython-311.pyc")
    box.exec("git add pkg/mod.py")  # the agent staged something: the diff must leave that as it was
    status_before = box.exec("git status --porcelain").output
    patch = box.diff()
    assert box.exec("git status --porcelain").output == status_before
    for name in ("new/dir/file.txt", "README.md", "pkg/mod.py", "data/blob.bin", "latin1.txt", "with space.txt"):
        assert f"b/{name}" in patch
    assert "__pycache__" not in patch and "GIT binary patch" in patch
    # applying the patch at the base commit reproduces the sandbox's tree exactly
    check = tmp_path / "check"
    git(tiny_repo.path, "worktree", "add", "-q", "--detach", str(check), tiny_repo.base)
    try:
        (tmp_path / "p.diff").write_text(patch)
        git(check, "apply", "--binary", str(tmp_path / "p.diff"))
        assert (check / "latin1.txt").read_bytes() == "café\n".encode("latin-1")
        assert (check / "data/blob.bin").read_bytes() == bytes(range(255, -1, -1))
        assert not (check / "README.md").exists()
        assert (check / "new/dir/file.txt").read_text() == "new\n"
    finally:
        git(tiny_repo.path, "worktree", "remove", "--force", str(check))


def test_diff_after_agent_commits_is_still_against_base(box):
    box.exec("echo more >> README.md && git commit -qam wip && echo uncommitted > extra.txt")
    patch = box.diff()
    assert "+more" in patch and "b/extra.txt" in patch


def test_clean_sandbox_has_an_empty_diff(box):
    assert box.diff() == ""


def test_destroyed_repository_is_a_patch_error(box):
    box.exec("rm -rf .git")
    with pytest.raises(PatchError, match="git diff against"):
        box.diff()


def test_sandbox_gone_when_the_container_is_removed_under_us(backend, tiny_task, run_labels, engine):
    sandbox = backend.open(tiny_task, {**run_labels, "rollout_id": "tiny/gone"})
    engine.api.remove_container(sandbox.id, force=True)
    for action in (lambda: sandbox.exec("true"), sandbox.diff, lambda: sandbox.read_file("README.md")):
        with pytest.raises(SandboxGone):
            action()
    with pytest.raises(SandboxGone):
        sandbox.write_file("x.txt", "x")
    sandbox.close()
    sandbox.close()  # idempotent, even when already gone


def test_sandbox_gone_during_a_command(backend, tiny_task, run_labels, engine):
    sandbox = backend.open(tiny_task, {**run_labels, "rollout_id": "tiny/gone-mid"})
    threading.Timer(1.0, lambda: engine.api.remove_container(sandbox.id, force=True)).start()
    with pytest.raises(SandboxGone):
        sandbox.exec("sleep 20", timeout=30)
    sandbox.close()


def test_closed_sandbox_raises_gone_and_leaves_no_container(backend, tiny_task, run_labels, engine):
    with backend.open(tiny_task, {**run_labels, "rollout_id": "tiny/closed"}) as sandbox:
        cid = sandbox.id
    assert not engine.containers.list(all=True, filters={"id": cid})
    with pytest.raises(SandboxGone):
        sandbox.exec("true")
