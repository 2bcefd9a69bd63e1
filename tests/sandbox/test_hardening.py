"""Hardened Docker sandboxes against the real engine: a non-root user, dropped capabilities, no-new-privileges, the
verifier's scripts out of the tests' reach, and a disk fill stopped and reported (docs/security.md)."""

from __future__ import annotations

import uuid

import docker
import pytest

from agentbon.config import SandboxConfig
from agentbon.errors import ImageBuildError, SandboxDiskLimit
from agentbon.orchestrate.faults import classify
from agentbon.sandbox import DockerBackend
from agentbon.types import Rollout, Task, TestSet
from agentbon.verify.runner import TestVerifier

pytestmark = pytest.mark.docker

CAP_SYS_ADMIN = 21
KEPT = {"CHOWN": 0, "DAC_OVERRIDE": 1, "FOWNER": 3}


def caps(status: str, field: str) -> int:
    line = next(ln for ln in status.splitlines() if ln.startswith(f"{field}:"))
    return int(line.split()[1], 16)


def hardened(sandbox_config: SandboxConfig, **changes) -> SandboxConfig:
    return sandbox_config.model_copy(update=changes)


@pytest.fixture
def open_box(engine, tiny_task, run_labels):
    """Opens sandboxes of the tiny task on a backend with the given config changes; closes them after."""
    opened = []

    def opener(config: SandboxConfig, task: Task | None = None):
        box = DockerBackend(config, engine).open(task or tiny_task, {**run_labels, "purpose": "hardening"})
        opened.append(box)
        return box

    yield opener
    for box in opened:
        box.close()


def test_commands_run_as_an_unprivileged_user_who_owns_the_repository(box):
    got = box.exec("id -u; id -g; whoami; touch new.txt && stat -c %u new.txt; touch ~/h && echo home-ok").output
    assert got.split() == ["10001", "10001", "agentbon", "10001", "home-ok"]
    assert box.user == "10001:10001" and not box.run_as.reason
    assert box.exec("touch /etc/evil").exit_code != 0  # root's files stay root's
    assert box.exec("apt-get install -y --no-download nothing 2>&1").exit_code != 0


def test_root_housekeeping_hands_what_it_writes_back_to_the_user(box):
    got = box.exec("id -u; mkdir -p made && echo x > made/by-root; exit 3", user="root")
    assert got.exit_code == 3 and got.output.split()[0] == "0"  # an early exit still leaves the hand-back to run
    assert box.exec("stat -c %u made made/by-root && echo more >> made/by-root").output.split() == ["10001", "10001"]
    box.write_file("written.txt", "w\n")
    assert box.exec("stat -c %u written.txt").output.strip() == "10001"
    with pytest.raises(ValueError, match="expected None"):
        box.exec("true", user="nobody")


def test_no_capability_beyond_the_measured_few_and_no_new_privileges(box, engine):
    user, root = box.exec("cat /proc/self/status").output, box.exec("cat /proc/self/status", user="root").output
    assert caps(user, "CapEff") == 0 and caps(user, "CapPrm") == 0
    kept = sum(1 << bit for bit in KEPT.values())
    assert caps(root, "CapEff") == kept and caps(root, "CapBnd") == kept
    assert not caps(root, "CapBnd") & (1 << CAP_SYS_ADMIN)
    assert "NoNewPrivs:\t1" in user and "NoNewPrivs:\t1" in root
    assert box.exec("mount -t tmpfs none /mnt 2>&1", user="root").exit_code != 0
    host = engine.api.inspect_container(box.id)["HostConfig"]
    assert host["CapDrop"] == ["ALL"] and set(host["CapAdd"]) == set(KEPT)
    assert host["SecurityOpt"] == ["no-new-privileges"]


@pytest.mark.parametrize("no_new_privileges", [True, False])
def test_a_setuid_binary_does_not_elevate(open_box, sandbox_config, no_new_privileges):
    box = open_box(hardened(sandbox_config, no_new_privileges=no_new_privileges))
    assert box.exec("cp /usr/bin/id /usr/local/bin/suid-id && chmod 4755 /usr/local/bin/suid-id", user="root").ok
    euid = box.exec("/usr/local/bin/suid-id -u").output.strip()
    # The second case shows the check can fail: without no-new-privileges the binary does make the user root.
    assert euid == ("10001" if no_new_privileges else "0")


def test_auto_falls_back_to_root_with_a_reason_where_the_user_cannot_work(open_box, engine, sandbox_config, tiny_task):
    # An image whose interpreter only root may run (as a prebuilt image might have it).
    box = open_box(hardened(sandbox_config, user="root"))
    base = engine.containers.get(box.id)
    assert box.exec("chmod 700 /usr/bin/python3*", user="root").ok
    tag = f"agentbon/test-rootonly:{uuid.uuid4().hex[:8]}"
    base.commit(repository=tag.split(":")[0], tag=tag.split(":")[1])
    try:
        task = tiny_task.model_copy(update={"environment": tiny_task.environment.model_copy(update={"image": tag})})
        fallen = open_box(hardened(sandbox_config, user="auto"), task)
        assert fallen.user == "0:0" and "interpreter" in fallen.run_as.reason
        assert fallen.isolation.startswith("docker (as root: user 10001:10001 cannot work in")  # the rollout's record
        assert fallen.exec("id -u").output.strip() == "0"
        with pytest.raises(ImageBuildError, match="sandbox.user=10001: cannot run as 10001:10001"):
            open_box(hardened(sandbox_config, user="10001"), task)
    finally:
        engine.images.remove(tag, force=True)


def test_another_uid_is_set_up_at_start(open_box, sandbox_config):
    box = open_box(hardened(sandbox_config, user="2000:3000"))
    assert box.exec("id -u; id -g; stat -c %u:%g pkg/mod.py; touch ~/ok && echo ok").output.split() == [
        "2000",
        "3000",
        "2000:3000",
        "ok",
    ]
    assert "pkg/mod.py" in (box.write_file("pkg/mod.py", "x = 1\n") or box.diff())


# A module of the package under test that, when the tests import it, looks for the verifier's directory (from its
# runner's command line) and tries to change every file there and plant a new one; the test passes only if it
# could not.
PROBING_MODULE = """import os


def _runner_dir():
    pid = os.getppid()
    for _ in range(8):
        try:
            argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\\0")
            stat = open(f"/proc/{pid}/stat").read()
        except OSError:
            return None
        for arg in argv:
            if arg.endswith(b"spec.json"):
                return os.path.dirname(arg.decode())
        pid = int(stat.rsplit(")", 1)[1].split()[1])
    return None


RUNNER = _runner_dir()
WROTE = []
for name in sorted(os.listdir(RUNNER)) if RUNNER else []:
    path = os.path.join(RUNNER, name)
    try:
        if os.path.isfile(path):
            open(path, "a").close()
            WROTE.append(name)
    except OSError:
        pass
try:
    open(os.path.join(RUNNER or "/nonexistent", "planted.py"), "w").close()
    WROTE.append("planted.py")
except OSError:
    pass


def double(x):
    assert RUNNER, "the verifier's directory was not found"
    assert not WROTE, f"wrote into the verifier's directory: {WROTE}"
    return x + x
"""


@pytest.mark.parametrize("user", ["auto", "root"])
def test_the_tests_cannot_write_the_verifiers_scripts(engine, sandbox_config, tiny_task, run_labels, user):
    backend = DockerBackend(hardened(sandbox_config, user=user), engine)
    with backend.open(tiny_task, {**run_labels, "purpose": "patch"}) as box:
        box.write_file("pkg/mod.py", PROBING_MODULE)
        patch = box.diff()
    task = tiny_task.model_copy(update={"grade": TestSet(pass_to_pass=["tests/test_mod.py::test_double"])})
    rollout = Rollout(run_id=run_labels["run_id"], task_id=task.task_id, index=900, patch=patch, status="submitted")
    verdict = TestVerifier(backend, labels=run_labels).verify(task, rollout, "grade")
    if user == "auto":
        assert verdict.status == "pass", (verdict.reason, verdict.log)
    else:  # as root the same module does write there: the check above can fail
        assert verdict.status == "fail" and "wrote into the verifier's directory" in verdict.log, (
            verdict.reason,
            verdict.log,
        )


def test_a_disk_fill_past_the_limit_is_stopped_and_reported(open_box, sandbox_config, engine):
    box = open_box(hardened(sandbox_config, disk_limit="64m", disk_check_s=0.5))
    assert box.quota is False and box.watchdog is not None  # this engine (overlay2 on ext4) has no size quota
    # At most 320 MB is written, then the command waits: only the watchdog's stop ends it before its timeout.
    filled = box.exec("for i in $(seq 1 8); do head -c 40M /dev/zero > /tmp/fill.$i; done; sleep 120", timeout=150)
    assert filled.exit_code == 137 and not filled.timed_out
    assert "over sandbox.disk_limit 64m" in filled.output and box.watchdog.tripped > 64 << 20
    with pytest.raises(SandboxDiskLimit, match="writable layer reached"):
        box.exec("true")
    box.watchdog.wait(timeout=60)
    with pytest.raises(docker.errors.NotFound):  # removed at once: its layer no longer takes the host's disk
        engine.api.inspect_container(box.id)
    failure = classify(SandboxDiskLimit("x"), place="agent")
    assert not failure.infra and failure.recorded_as == "agent_error"  # the model's outcome, as docs/chaos.md's disk fault


def test_a_sandbox_within_its_limit_is_left_alone(open_box, sandbox_config):
    box = open_box(hardened(sandbox_config, disk_limit="512m", disk_check_s=0.2))
    assert box.exec("head -c 20M /dev/zero > /tmp/small && sync").ok
    while box.watchdog.checks < 3:  # the watchdog measured the layer after the write, more than once
        assert box.exec("sleep 0.2").ok
    assert box.watchdog.tripped is None and box.alive()
