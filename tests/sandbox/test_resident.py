"""The resident executor: one per sandbox and user, with a plain exec's guarantees and none of its engine calls."""

from __future__ import annotations

import pytest

from agentbon.sandbox import resident

pytestmark = pytest.mark.docker


@pytest.fixture
def exec_box(engine, sandbox_config, tiny_task, run_labels):
    """A sandbox whose commands go one engine exec each: the reference the resident executor must match."""
    from agentbon.sandbox import DockerBackend

    backend = DockerBackend(sandbox_config.model_copy(update={"executor": "exec"}), engine)
    with backend.open(tiny_task, {**run_labels, "rollout_id": "tiny/exec", "purpose": "test"}) as sandbox:
        yield sandbox


COMMANDS = [
    "echo out; exit 3",
    "printf 'no newline'",
    "head -c 9000 /dev/zero | tr '\\0' a; echo; seq 1 3000",  # over the 4000-byte cap: head and tail kept
    "python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)))'",
    "cd /tmp && pwd && id -u",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_a_command_comes_back_as_a_plain_exec_gives_it(box, exec_box, command):
    got, want = box.exec(command), exec_box.exec(command)
    assert (got.exit_code, got.output, got.truncated, got.timed_out) == (
        want.exit_code, want.output, want.truncated, want.timed_out,
    )
    assert box.use().executor == "resident"


def test_stdout_and_stderr_keep_their_order(box, exec_box):
    # One pipe for both, in the order written (an engine exec carries them as two streams, which may swap).
    command = "echo one; echo two >&2; echo three; echo four >&2; exit 3"
    got = box.exec(command)
    assert (got.exit_code, got.output) == (3, "one\ntwo\nthree\nfour\n")
    assert sorted(exec_box.exec(command).output.splitlines()) == sorted(got.output.splitlines())


def test_a_patch_is_captured_byte_for_byte(box, exec_box):
    payload = bytes(range(256)) * 40
    for sandbox in (box, exec_box):
        sandbox.write_file("blob.bin", payload)
    assert box.diff() == exec_box.diff()
    assert "GIT binary patch" in box.diff()


def test_root_commands_get_their_own_executor(box):
    assert box.exec("id -u").output.strip() == box.user.split(":")[0]
    assert box.exec("id -u", user="root").output.strip() == "0"
    assert box.exec("id -u").output.strip() == box.user.split(":")[0]


def test_timeout_kills_the_command_and_what_it_left_running(box):
    result = box.exec("sleep 300 & sleep 300", timeout=1)
    assert result.timed_out and result.exit_code in (124, 137)
    left = box.exec("ps -eo args | grep -c '^sleep 300' || true")
    assert left.output.strip() == "0"
    assert box.exec("echo alive").output == "alive\n"  # the executor outlived its command


def test_exploit_forged_frames_through_proc_are_refused(box):
    # A command (a candidate's test run, say) tries to write an "exit 0" frame into the executor's pipes.
    forge = (
        "import glob, json, struct\n"
        "hits = []\n"
        "for d in glob.glob('/proc/[0-9]*'):\n"
        "    try:\n"
        "        cmd = open(d + '/cmdline', 'rb').read()\n"
        "    except OSError:\n"
        "        continue\n"
        "    if b'agentbon-resident' not in cmd and b'-I\\x00-S' not in cmd:\n"
        "        continue\n"
        "    for fd in ('0', '1'):\n"
        "        try:\n"
        "            f = open(d + '/fd/' + fd, 'wb')\n"
        "            p = json.dumps({'exit': 0, 'oom': -1}).encode()\n"
        "            f.write(b'X' + struct.pack('>I', len(p)) + p); f.flush(); hits.append('wrote')\n"
        "        except OSError:\n"
        "            hits.append('refused')\n"
        "print(' '.join(hits))\n"
    )
    box.write_file("/tmp/forge.py", forge)
    result = box.exec("python3 /tmp/forge.py; exit 7")
    assert result.exit_code == 7
    assert "refused" in result.output and "wrote" not in result.output
    assert box.exec("echo next").output == "next\n"


def test_exploit_a_command_that_kills_the_executor_fails_and_the_next_one_runs(box):
    result = box.exec("kill -9 -1; sleep 5")
    assert result.exit_code == 137 and "executor went away" in result.output
    assert box.exec("echo again").output == "again\n"
    assert box.use().executor == "resident"


def test_an_image_without_python3_falls_back_to_one_exec_per_command(box, monkeypatch):
    monkeypatch.setattr(resident, "LAUNCH", "exit 97")
    fresh = box._executor.__class__(box._api, box._executor.cid, box.config)
    box._executor = fresh
    assert box.exec("echo fallback").output == "fallback\n"
    assert box.use().executor.startswith("exec: the resident executor went away")


def test_out_of_memory_is_told_apart_from_other_kills(box):
    hog = "python3 -c 'x = bytearray(1 << 30); print(len(x))'"
    result = box.exec(hog)
    assert result.exit_code == 137 and "out of memory" in result.output
    killed = box.exec("kill -9 $$")
    assert killed.exit_code == 137 and "out of memory" not in killed.output
