"""Docker sandboxes: a rollout's lifecycle in few engine calls, and the one-exec diff's edge cases."""

from __future__ import annotations

import collections
import threading

import pytest
import requests

from agentbon.errors import PatchError
from agentbon.sandbox import patch as patch_module

pytestmark = pytest.mark.docker


@pytest.fixture
def engine_calls(monkeypatch):
    """Counts the engine's HTTP calls by method and endpoint (ids left out), as the client sends them."""
    counts: collections.Counter[str] = collections.Counter()
    send = requests.Session.send

    def counting(session, request, **kwargs):
        if threading.current_thread().name.startswith("disk-"):  # the disk watchdog's own measurements
            return send(session, request, **kwargs)
        parts = request.path_url.split("?")[0].split("/")[2:]  # drop the API version
        shape = "/".join("*" if len(p) >= 12 or p.startswith("agentbon-") else p for p in parts)
        counts[f"{request.method} {shape}"] += 1
        return send(session, request, **kwargs)

    monkeypatch.setattr(requests.Session, "send", counting)
    return counts


def test_rollout_lifecycle_engine_calls_with_one_exec_per_command(engine, sandbox_config, tiny_task, run_labels,
                                                                   engine_calls):
    from agentbon.sandbox import DockerBackend

    backend = DockerBackend(sandbox_config.model_copy(update={"executor": "exec"}), engine)
    backend.prepare(tiny_task)  # the image is found once per backend, as a worker's first rollout does
    # A backend's first sandbox of an image also learns whether the engine has disk quotas and probes the user.
    backend.open(tiny_task, {**run_labels, "rollout_id": "tiny/first"}).close()
    engine_calls.clear()
    sandbox = backend.open(tiny_task, {**run_labels, "rollout_id": "tiny/calls"})
    assert dict(engine_calls) == {"POST containers/create": 1, "POST containers/*/start": 1}  # no inspect
    engine_calls.clear()
    sandbox.write_file("answer.txt", "yes\n")
    assert sum(engine_calls.values()) == 2  # stat (for the mode) and the archive put
    engine_calls.clear()
    patch = sandbox.diff()
    assert "+yes" in patch
    assert dict(engine_calls) == {"POST containers/*/exec": 1, "POST exec/*/start": 1, "GET exec/*/json": 1}
    engine_calls.clear()
    assert sandbox.read_file("answer.txt") == b"yes\n"
    assert dict(engine_calls) == {"GET containers/*/archive": 1}  # the stat comes with the archive
    engine_calls.clear()
    sandbox.close()
    assert dict(engine_calls) == {"DELETE containers/*": 1}  # no stop first


def test_rollout_lifecycle_engine_calls_with_the_resident_executor(backend, tiny_task, run_labels, engine_calls):
    backend.prepare(tiny_task)
    backend.open(tiny_task, {**run_labels, "rollout_id": "tiny/first"}).close()
    engine_calls.clear()
    sandbox = backend.open(tiny_task, {**run_labels, "rollout_id": "tiny/calls"})
    assert dict(engine_calls) == {"POST containers/create": 1, "POST containers/*/start": 1}
    engine_calls.clear()
    sandbox.write_file("answer.txt", "yes\n")
    engine_calls.clear()
    assert "+yes" in sandbox.diff()
    # The first command starts the executor: one exec, attached; it is never inspected.
    assert dict(engine_calls) == {"POST containers/*/exec": 1, "POST exec/*/start": 1}
    engine_calls.clear()
    for i in range(5):
        assert sandbox.exec(f"echo {i}").output == f"{i}\n"
    assert "+yes" in sandbox.diff()
    assert sandbox.exec("sleep 3", timeout=30).ok
    assert dict(engine_calls) == {}  # no engine call per command, however long it runs
    assert sandbox.use().executor == "resident"
    assert sandbox.use().engine_calls == 2 + 2 + 2  # start, stat and put (write_file), the executor
    engine_calls.clear()
    sandbox.close()
    assert dict(engine_calls) == {"DELETE containers/*": 1}


def test_a_long_command_is_not_polled_every_second(engine, sandbox_config, tiny_task, run_labels, engine_calls):
    from agentbon.sandbox import DockerBackend

    backend = DockerBackend(sandbox_config.model_copy(update={"executor": "exec"}), engine)
    box = backend.open(tiny_task, {**run_labels, "rollout_id": "tiny/polled"})
    engine_calls.clear()
    result = box.exec("sleep 6", timeout=30)
    assert result.ok and result.duration_s >= 6
    assert engine_calls["GET exec/*/json"] <= 4  # checks at 1, 3 s, then the exit code (was one a second)
    box.close()


def test_git_messages_do_not_reach_the_patch(box):
    # With autocrlf git warns on stderr while staging; only the diff itself may come back.
    box.exec("git config core.autocrlf true && printf 'a\\r\\nb\\r\\n' > crlf.txt && echo x >> README.md")
    patch = box.diff()
    assert patch.startswith("diff --git ") and "warning" not in patch
    assert "b/crlf.txt" in patch and "+x" in patch


def test_patch_over_the_limit_is_refused_in_the_sandbox(box, monkeypatch):
    monkeypatch.setattr(patch_module, "MAX_PATCH_BYTES", 4000)
    box.exec("head -c 6000 /dev/zero | tr '\\0' 'a' | fold -w 60 > big.txt")
    with pytest.raises(PatchError, match=r"the patch is \d+ bytes, over the 4000-byte limit"):
        box.diff()
    monkeypatch.undo()
    assert "b/big.txt" in box.diff()


def test_read_file_follows_relative_and_chained_links_and_refuses_loops(box):
    box.exec("mkdir -p d && echo deep > d/target && ln -s target d/rel && ln -s d/rel chain && ln -s loop loop")
    assert box.read_file("d/rel") == b"deep\n"
    assert box.read_file("chain") == b"deep\n"
    with pytest.raises(OSError):
        box.read_file("loop")
    with pytest.raises(FileNotFoundError):
        box.read_file("d/missing")
