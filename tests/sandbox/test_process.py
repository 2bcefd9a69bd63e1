"""The process backend (no engine needed): same Sandbox protocol, weaker isolation, said so."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from sbx_repo import FUTURE_MARKER, GOLD_MARKER, make_task

from agentbon.config import SandboxConfig
from agentbon.errors import EngineUnavailable, ImageBuildError, SandboxGone
from agentbon.protocols import Sandbox
from agentbon.sandbox import ProcessBackend, make_backend
from agentbon.sandbox.pexec import netns_prefix
from agentbon.sandbox.process import reap_process_sandboxes
from tests.waiting import wait_until

CONFIG = SandboxConfig(backend="process", memory="512m", exec_timeout_s=20.0, output_limit=2000)


@pytest.fixture(scope="module")
def process_backend(tmp_path_factory):
    return ProcessBackend(CONFIG, cache_dir=tmp_path_factory.mktemp("cache"))


@pytest.fixture
def pbox(process_backend, tiny_task):
    with process_backend.open(tiny_task, {"run_id": "proctest", "rollout_id": "tiny/0"}) as sandbox:
        yield sandbox


def test_process_sandbox_is_a_sandbox_and_says_it_is_weaker(pbox):
    assert isinstance(pbox, Sandbox)
    assert pbox.isolation == "process (weaker isolation)"


def test_using_the_process_backend_logs_a_warning(caplog, tmp_path):
    with caplog.at_level(logging.WARNING):
        ProcessBackend(CONFIG, cache_dir=tmp_path)
    assert "weaker isolation" in caplog.text


def test_commands_run_in_a_clone_at_base_with_hygienic_history(pbox, tiny_repo):
    result = pbox.exec("pwd; git rev-parse HEAD; git for-each-ref --format='%(refname)'; git remote")
    assert result.ok
    assert result.output.split() == [pbox.workdir, tiny_repo.base, "refs/heads/main"]
    assert pbox.exec(f"git cat-file -e {tiny_repo.future}").exit_code != 0
    assert FUTURE_MARKER not in pbox.exec("git log --all -p").output
    assert GOLD_MARKER not in pbox.exec("grep -r MARKER . || true").output
    assert pbox.exec("echo $HOME").output.strip().startswith(str(Path(pbox.workdir).parent))


def test_failed_command_timeout_and_output_cap(pbox):
    failed = pbox.exec("echo oops >&2; exit 4")
    assert (failed.exit_code, failed.output, failed.timed_out) == (4, "oops\n", False)
    loop = pbox.exec("while :; do :; done", timeout=1)
    assert loop.timed_out and loop.exit_code == 124  # the loop never ends by itself: the timeout ended it
    assert pbox.exec("pwd", workdir="nope").exit_code == 126
    assert pbox.exec("pwd", workdir="/etc").exit_code == 126
    flood = pbox.exec("seq 1 500000")
    assert flood.truncated and flood.output.startswith("1\n2\n") and flood.output.endswith("500000\n")


def test_memory_limit_applies(pbox):
    result = pbox.exec("python3 -c 'x = bytearray(2 << 30)'")
    assert result.exit_code != 0 and "MemoryError" in result.output


@pytest.mark.skipif(not netns_prefix(), reason="this machine does not allow network namespaces (unshare)")
def test_network_is_cut_where_namespaces_are_allowed(pbox):
    result = pbox.exec("python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), timeout=3)'")
    assert result.exit_code != 0 and "unreachable" in result.output.lower()


def _running(pid: int) -> bool:
    try:  # a zombie is dead, whatever kill(pid, 0) says
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_background_jobs_end_with_their_command_and_close_kills_the_rest(process_backend, tiny_task):
    sandbox = process_backend.open(tiny_task, {"run_id": "proctest"})
    result = sandbox.exec("sleep 300 & echo $!")
    assert wait_until(lambda: not _running(int(result.output)))
    escaped = sandbox.exec("setsid sleep 301 > /dev/null 2>&1 & echo started")
    assert escaped.ok and escaped.duration_s < 150  # returned, not held for the escaped sleep's 301 s
    sandbox.close()
    assert not Path(sandbox.workdir).exists()
    assert wait_until(lambda: "sleep 301" not in os.popen("ps -eo stat=,args= | grep -v '^Z'").read())


def test_files_diff_and_paths(pbox, tmp_path):
    pbox.write_file("new/dir/a.txt", "A\n")
    pbox.write_file("data/blob.bin", bytes(range(255, -1, -1)))
    pbox.exec("git rm -q README.md && git add new")
    assert pbox.read_file("new/dir/a.txt") == b"A\n"
    patch = pbox.diff()
    assert "b/new/dir/a.txt" in patch and "GIT binary patch" in patch and "b/README.md" in patch
    assert pbox.exec("git diff --cached --name-only").output.split() == ["README.md", "new/dir/a.txt"]
    with pytest.raises(PermissionError):
        pbox.read_file("/etc/passwd")
    with pytest.raises(PermissionError):
        pbox.write_file("../../escape.txt", "x")
    (tmp_path / "host.txt").write_text("H")
    pbox.copy_in(str(tmp_path / "host.txt"), "in/host.txt")
    pbox.copy_out("in/host.txt", str(tmp_path / "back.txt"))
    assert (tmp_path / "back.txt").read_text() == "H"


def test_gone_when_the_directory_disappears(process_backend, tiny_task):
    sandbox = process_backend.open(tiny_task, {"run_id": "proctest"})
    reap_process_sandboxes({"run_id": "proctest"})
    with pytest.raises(SandboxGone):
        sandbox.exec("true")
    sandbox.close()
    sandbox.close()


def test_reap_only_matching_labels(process_backend, tiny_task):
    a = process_backend.open(tiny_task, {"run_id": "proc-a"})
    b = process_backend.open(tiny_task, {"run_id": "proc-b"})
    try:
        assert process_backend.reap({"run_id": "proc-a"}) == 1
        assert not Path(a.workdir).exists() and Path(b.workdir).exists()
    finally:
        a.close()
        b.close()


def test_setup_commands_run_and_failures_are_build_errors(process_backend, tiny_repo):
    task = make_task(tiny_repo, "tiny-psetup", setup=["echo ready > setup.txt"])
    with process_backend.open(task, {"run_id": "proctest"}) as sandbox:
        assert sandbox.read_file("setup.txt") == b"ready\n"
    broken = make_task(tiny_repo, "tiny-pbroken", setup=["exit 7"])
    with pytest.raises(ImageBuildError, match="exit 7"):
        process_backend.open(broken, {"run_id": "proctest"})
    assert reap_process_sandboxes({"run_id": "proctest"}) == 0  # the failed one was not left behind


def test_prebuilt_image_needs_docker(process_backend, tiny_repo):
    with pytest.raises(ImageBuildError, match="needs the docker backend"):
        process_backend.prepare(make_task(tiny_repo, image="some/image:tag"))


def test_make_backend_picks_and_falls_back(monkeypatch, tmp_path):
    assert isinstance(make_backend(CONFIG), ProcessBackend)
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    with pytest.raises(EngineUnavailable, match="cannot be reached"):
        make_backend(SandboxConfig())
    assert isinstance(make_backend(SandboxConfig(), allow_fallback=True), ProcessBackend)


def test_the_tasks_variables_reach_every_command(process_backend, tiny_repo):
    task = make_task(tiny_repo, "tiny-env", env={"PYTHONPATH": "src", "ACME_MODE": "a b"}, setup=['test "$ACME_MODE" = "a b"'])
    with process_backend.open(task, {"run_id": "proctest", "rollout_id": "tiny-env/0"}) as box:
        assert box.exec('printf "%s|%s" "$PYTHONPATH" "$ACME_MODE"').output == "src|a b"
