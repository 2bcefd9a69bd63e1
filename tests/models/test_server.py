"""LocalServer with real child processes: ready, dies while starting, never answers, stopped with its children."""

from __future__ import annotations

import os
import sys
import time

import pytest

from agentbon.errors import ServerFailure
from agentbon.models.server import LocalServer, free_port

# A child that spawns a grandchild that must die with it and serves GET /v1/models after a short delay, or, given a
# file path as argv[2], once that file exists (the test, not the clock, says when the server has loaded).
SERVE = r"""
import http.server, os, subprocess, sys, time
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print("loading", flush=True)
time.sleep(0.3)
while len(sys.argv) > 2 and not os.path.exists(sys.argv[2]):
    time.sleep(0.02)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{"data": []}')
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def children_of(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    return out


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_server_starts_answers_and_stops_with_its_children():
    port = free_port()
    server = LocalServer([sys.executable, "-c", SERVE, str(port)], port=port, name="toy", ready_timeout_s=20)
    with server as endpoint:
        assert endpoint == f"http://127.0.0.1:{port}/v1"
        assert server.alive() and server.started_s is not None and server.started_s >= 0.3
        pid = server.proc.pid
        time.sleep(0.2)
        kids = children_of(pid)
        assert kids, "the toy server should have spawned a child"
    assert not server.alive()
    deadline = time.monotonic() + 60  # a loaded machine may take a while to reap them
    while not all(gone(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(gone(k) for k in kids)
    server.stop()  # twice is fine


def test_server_that_exits_while_starting_reports_its_log_tail():
    port = free_port()
    cmd = [sys.executable, "-c", "import sys; print('error: model file is corrupt'); sys.exit(3)"]
    with pytest.raises(ServerFailure, match="(?s)exited with status 3.*model file is corrupt"):
        LocalServer(cmd, port=port, name="broken").start()


def test_server_that_never_answers_times_out_and_is_stopped():
    port = free_port()
    server = LocalServer([sys.executable, "-c", "import time; time.sleep(60)"], port=port, ready_timeout_s=1.0)
    with pytest.raises(ServerFailure, match="did not answer .* within 1s"):
        server.start()
    assert server.proc is None


# Answers GET /v1/models only with the key it was given, as a server started with --api-key does.
KEYED = r"""
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.headers.get("Authorization") == "Bearer " + sys.argv[2]
        self.send_response(200 if ok else 401); self.end_headers(); self.wfile.write(b'{"data": []}')
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_a_server_that_requires_a_key_is_asked_with_it():
    port = free_port()
    keyed = LocalServer([sys.executable, "-c", KEYED, str(port), "s3cret"], port=port, api_key="s3cret",
                        ready_timeout_s=30)  # fmt: skip
    with keyed as endpoint:
        assert endpoint == f"http://127.0.0.1:{port}/v1"
    # Without the key the same server never counts as ready: the check above can fail.
    port = free_port()
    unkeyed = LocalServer([sys.executable, "-c", KEYED, str(port), "s3cret"], port=port, ready_timeout_s=2)
    with pytest.raises(ServerFailure, match="did not answer"):
        unkeyed.start()


def gated_server(gate: str) -> LocalServer:
    port = free_port()
    return LocalServer([sys.executable, "-c", SERVE, str(port), gate], port=port, name="gated", ready_timeout_s=60)


def answers(endpoint: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{endpoint}/models", timeout=2.0, trust_env=False).status_code == 200
    except httpx.TransportError:
        return False


def test_launch_returns_at_once_and_start_waits_for_the_server_it_launched(tmp_path):
    gate = tmp_path / "loaded"
    server = gated_server(str(gate))
    try:
        server.launch()
        pid = server.proc.pid
        assert server.alive() and not answers(server.endpoint)  # launched, still loading
        server.launch()  # idempotent: the same process
        assert server.proc.pid == pid
        gate.touch()
        assert server.start() == server.endpoint and answers(server.endpoint)
        assert server.proc.pid == pid and server.started_s is not None  # counted from the launch
        assert server.start() == server.endpoint  # ready: returns at once
    finally:
        server.stop()
    assert not server.alive()


def test_a_stopped_server_is_launched_again_by_start(tmp_path):
    gate = tmp_path / "loaded"
    gate.touch()
    server = gated_server(str(gate))
    try:
        server.start()
        first = server.proc.pid
        server.stop()
        server.start()  # a restart: a new process that is waited for again
        assert server.proc.pid != first and answers(server.endpoint)
    finally:
        server.stop()
