"""The fault injector of ``chaos_bench.py``: a controller thread that breaks real parts at chosen moments.

Each fault fires once, when the scripted model server receives the target rollout's step-1 request (the
sandbox is up and the agent has run one command): the request's reply waits (bounded) while the controller
acts, so the rollout meets the fault on its next sandbox command or model call. Follow-ups that need another
moment (a verification container, a ``ray::run_verify`` worker) are polled for, each within a time bound.
Every action is logged as an ``Injection`` naming the rollouts it hit, so the outcomes can be checked.

Faults outside the agent's loop fire where they happen: in the sandbox backend (``ChaosBackend``: a task's
preparation meets a ``git clone`` that fails, a rollout's sandbox start meets a connection reset, each once, in
whichever Ray worker gets there first, and leaves a marker file the bench reads back as its injection), at the first
judge call of the critic selector (the server answers HTTP 500 for a window), and at the model server's start
(``ChaosService``: the server process the run starts dies while loading, once).
"""

from __future__ import annotations

import glob
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentbon.testing.http import ScriptedServer, Served

ROLLOUT_FAULTS = ("container", "worker", "http500", "timeout", "drop", "disk", "engine", "open")
"""Faults aimed at a rollout (``disk`` is in the model's script, ``open`` in the sandbox backend; the others fire at
its step 1)."""
OUTSIDE_FAULTS = ("prepare", "open", "judge", "server-start")
"""Faults outside the agent's loop: a task's preparation, a sandbox's start, the critic's judge call, the model
server's start."""
ALL_FAULTS = (*ROLLOUT_FAULTS, "prepare", "judge", "server-start")
NOT_AT_STEP_1 = ("disk", "open")
"""Rollout faults the controller does not fire at step 1 (the script, or the backend, does)."""
BLOCK_S = 20.0
"""Longest a target's reply waits for the controller's action."""
FOLLOW_UP_S = 180.0
"""Longest the controller looks for a verification container or verify worker to kill."""
DOCKERD_LOG = "/var/log/agentbon-dockerd.log"
ENGINE_SETTLE_S = 30.0
"""After the engine answers again, how long failures still count as the restart's (units that were mid-call)."""


@dataclass
class Injection:
    """One fault the controller injected (or could not)."""

    fault: str
    target: str
    """The rollout aimed at (``verify`` for verification faults)."""
    at: float
    detail: str = ""
    hit: list[str] = field(default_factory=list)
    """Rollout ids whose current attempt the fault reached."""
    tasks: list[str] = field(default_factory=list)
    """Tasks whose verification it reached (verification faults)."""
    done: bool = True
    """False when it could not be injected (the note says why)."""
    until: float = 0.0
    """For faults that hit everything running (the engine restart): every infra event up to then is theirs."""


# ------------------------------------------------------------------------------------ processes


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def pids_named(text: str) -> list[int]:
    """Pids whose command line (a Ray worker's title, ``ray::run_rollout``) contains ``text``."""
    return [int(p.split("/")[2]) for p in glob.glob("/proc/[0-9]*/cmdline") if text in _cmdline(int(p.split("/")[2]))]


def pid_of_client(port: int) -> int | None:
    """The pid holding the TCP socket whose local port is ``port`` (the sender of a request), from ``/proc``."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) > 9 and int(parts[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(f"socket:[{parts[9]}]")
    for fd in glob.glob("/proc/[0-9]*/fd/*"):
        try:
            if os.readlink(fd) in inodes:
                return int(fd.split("/")[2])
        except OSError:
            continue
    return None


def restart_dockerd(wait_s: float = 120.0) -> str:
    """Restart the Docker engine the way ``.ci/setup-docker.sh`` started it (same flags, same log); say how."""
    if os.geteuid() != 0:
        return "skipped: restarting dockerd needs root"
    pids = [int(p.split("/")[2]) for p in glob.glob("/proc/[0-9]*/comm") if Path(p).read_text().strip() == "dockerd"]
    if len(pids) != 1:
        return f"skipped: {len(pids)} dockerd processes"
    argv = _cmdline(pids[0]).split()
    if Path("/run/systemd/system").is_dir():
        return "skipped: systemd manages dockerd here (setup-docker.sh did not start it)"
    t0 = time.monotonic()
    os.kill(pids[0], signal.SIGTERM)
    while Path(f"/proc/{pids[0]}").exists() and time.monotonic() - t0 < wait_s:
        time.sleep(0.2)
    stopped = time.monotonic() - t0
    with open(DOCKERD_LOG, "a") as log:
        subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    while subprocess.run(["docker", "version"], capture_output=True).returncode != 0:
        if time.monotonic() - t0 > wait_s:
            return f"dockerd stopped in {stopped:.1f}s but did not come back within {wait_s:.0f}s"
        time.sleep(0.5)
    return f"dockerd ({shlex.join(argv)}) stopped in {stopped:.1f}s, answering again after {time.monotonic() - t0:.1f}s"


# ------------------------------------------------------------------------------------ controller


class Chaos:
    """Injects the planned faults from its own thread; ``hook`` goes into the scripted server's hooks."""

    def __init__(
        self,
        server: ScriptedServer,
        run_id: str,
        targets: dict[str, list[str]],
        locate: Callable[[int | None], str | None],
        *,
        window_s: float,
        timeout_hang: int,
        judge: bool = False,
    ):
        from agentbon.sandbox import docker_client

        self.server, self.run_id, self.targets, self.locate = server, run_id, targets, locate
        self.window_s, self.timeout_hang, self.judge = window_s, timeout_hang, judge
        self.client = docker_client(timeout=30)
        self.log: list[Injection] = []
        self._jobs: queue.Queue[tuple[str, str, Served, threading.Event]] = queue.Queue()
        self._polls: list[tuple[str, float, Callable[[], Injection | None]]] = []
        self.fired: set[tuple[str, str]] = set()
        """(fault, rollout id) of the faults fired so far."""
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="chaos", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=BLOCK_S)
        for fault, _, _ in self._polls:
            self.log.append(
                Injection(fault, "verify", time.time(), "no occasion arose before the run ended", done=False)
            )
        self._polls.clear()

    def hook(self, served: Served, body: dict[str, Any]) -> None:
        """Fire the faults aimed at this request's rollout when it asks for step 1 (once each); the judge fault at
        the first judge call (a request for logprobs of a 3-token answer)."""
        if self.judge and body.get("logprobs") and body.get("max_tokens") == 3:
            with self._lock:
                first = ("judge", "critic") not in self.fired
                self.fired.add(("judge", "critic"))
            if first:
                self.server.fail("http500", self.window_s)
                self.log.append(Injection("judge", "critic", served.at, f"from the first judge call, every request "
                                          f"answered with http500 for {self.window_s:g}s", until=0.0))  # fmt: skip
            return
        rid = self.locate(served.seed)
        if rid is None or served.turns != 1:
            return
        for fault in self.targets.get(rid, []):
            with self._lock:
                if fault in NOT_AT_STEP_1 or (fault, rid) in self.fired:
                    continue
                self.fired.add((fault, rid))
            done = threading.Event()
            self._jobs.put((fault, rid, served, done))
            if fault != "engine":  # the engine takes long to restart: the rollout meets it wherever it is
                done.wait(BLOCK_S)

    # ------------------------------------------------------------------ loop
    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                fault, rid, served, done = self._jobs.get(timeout=0.2)
            except queue.Empty:
                pass
            else:
                try:
                    self.log.append(self._inject(fault, rid, served))
                except Exception as e:  # a benchmark figure, not a crash: record what went wrong
                    self.log.append(Injection(fault, rid, time.time(), f"{type(e).__name__}: {e}", done=False))
                finally:
                    done.set()
            for poll in list(self._polls):
                name, deadline, attempt = poll
                found = attempt()
                if found is not None:
                    self.log.append(found)
                    self._polls.remove(poll)
                elif time.monotonic() > deadline:
                    self.log.append(Injection(name, "verify", time.time(), "no occasion within the bound", done=False))
                    self._polls.remove(poll)

    def _inject(self, fault: str, rid: str, served: Served) -> Injection:
        now = time.time()
        if fault == "container":
            killed = self._kill_containers({"agentbon.rollout_id": rid})
            self._polls.append(("verify-container", time.monotonic() + FOLLOW_UP_S, self._kill_verify_container))
            return Injection(
                fault,
                rid,
                now,
                f"docker kill {', '.join(killed) or 'nothing'}",
                hit=[rid] if killed else [],
                done=bool(killed),
            )
        if fault == "worker":
            pid = pid_of_client(served.client_port)
            title = _cmdline(pid) if pid else ""
            self._polls.append(("verify-worker", time.monotonic() + FOLLOW_UP_S, self._kill_verify_worker))
            if pid is None or "run_rollout" not in title:
                return Injection(fault, rid, now, f"sender of port {served.client_port} is {pid} {title!r}", done=False)
            os.kill(pid, signal.SIGKILL)
            return Injection(fault, rid, now, f"SIGKILL pid {pid} ({title})", hit=[rid])
        if fault in ("http500", "drop"):
            self.server.fail(fault, self.window_s)  # type: ignore[arg-type]
            return Injection(fault, rid, served.at, f"every request answered with {fault} for {self.window_s:g}s")
        if fault == "timeout":
            self.server.fail("timeout", self.window_s * 6, requests=self.timeout_hang)
            return Injection(
                fault, rid, served.at, f"the next {self.timeout_hang} requests held past the client's timeout"
            )
        if fault == "engine":
            inflight = self._containers({})
            detail = restart_dockerd()
            hit = sorted({c.labels.get("agentbon.rollout_id", "") for c in inflight} - {""})
            tasks = sorted({c.labels.get("agentbon.task_id", "") for c in inflight if c.labels.get("agentbon.stage")})
            up = "answering" in detail
            return Injection(
                fault,
                rid,
                now,
                detail,
                hit=hit if up else [],
                tasks=tasks,
                done=up,
                until=time.time() + ENGINE_SETTLE_S if up else 0.0,
            )
        raise ValueError(f"unknown fault {fault!r}")

    # --------------------------------------------------------------- helpers
    def _containers(self, labels: dict[str, str]) -> list[Any]:
        wanted = [f"agentbon.run_id={self.run_id}", *(f"{k}={v}" for k, v in labels.items())]
        return self.client.containers.list(filters={"label": wanted, "status": "running"})

    def _kill_containers(self, labels: dict[str, str]) -> list[str]:
        killed = []
        for c in self._containers(labels):
            try:
                c.kill()
                killed.append(c.name)
            except Exception:  # gone meanwhile
                continue
        return killed

    def _kill_verify_container(self) -> Injection | None:
        now = time.time()
        for c in self._containers({"agentbon.stage": "verify"}):
            try:
                c.kill()
            except Exception:  # finished meanwhile: try the next one, or the next poll
                continue
            return Injection(
                "verify-container", "verify", now, f"docker kill {c.name}", tasks=[c.labels["agentbon.task_id"]]
            )
        return None

    def _kill_verify_worker(self) -> Injection | None:
        pids = pids_named("ray::run_verify")
        if not pids or not self._containers({"agentbon.stage": "verify"}):
            return None  # only while it verifies: an idle title lingers for a moment
        tasks = sorted({c.labels.get("agentbon.task_id", "") for c in self._containers({"agentbon.stage": "verify"})})
        now = time.time()
        os.kill(pids[0], signal.SIGKILL)
        return Injection("verify-worker", "verify", now, f"SIGKILL pid {pids[0]} (ray::run_verify)", tasks=tasks)


# ------------------------------------------------------------------------------------ outside the agent


def mark_once(folder: str, fault: str, target: str, detail: str) -> bool:
    """True for the first caller of (fault, target) across every process (a marker file made exclusively), which
    records the injection there for the bench to read back."""
    import json

    path = Path(folder) / f"{fault}--{target.replace('/', '--')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as f:
        json.dump({"fault": fault, "target": target, "at": time.time(), "detail": detail, "pid": os.getpid()}, f)
    return True


def injections_in(folder: str) -> list[Injection]:
    """The injections ``ChaosBackend`` and ``ChaosService`` recorded (from their marker files)."""
    import json

    out = []
    for path in sorted(Path(folder).glob("*.json")):
        m = json.loads(path.read_text())
        rollout = m["fault"] == "open"
        out.append(Injection(m["fault"], m["target"], m["at"], m["detail"], hit=[m["target"]] if rollout else [],
                             tasks=[] if rollout else [m["target"]]))  # fmt: skip
    return out


def connection_reset() -> None:
    """A real ``ConnectionResetError``: a peer that accepts, then aborts the connection (RST) before answering."""
    import socket
    import struct

    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        peer, _ = listener.accept()
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()
        try:
            client.recv(1)
        finally:
            client.close()
    raise ConnectionResetError("the peer closed without a reset")  # recv returned: the kernel did not reset


class ChaosBackend:
    """The run's real sandbox backend, with faults outside the agent's loop: the first preparation of each task in
    ``prepare`` runs a ``git clone`` of a repository that is not there (a real ``CalledProcessError``); the first
    sandbox start of each rollout in ``open`` meets a connection reset (a real ``ConnectionResetError``). Neither
    exception is in the failure taxonomy's table: the place they are raised at makes them infrastructure."""

    def __init__(self, config: Any, folder: str = "", prepare: tuple[str, ...] = (), open: tuple[str, ...] = ()):
        from agentbon.orchestrate.factories import default_backend

        self._inner = default_backend(config)
        self.folder, self.prepare_targets, self.open_targets = folder, set(prepare), set(open)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_inner"], name)

    def prepare(self, task: Any) -> Any:
        if task.task_id in self.prepare_targets and mark_once(
            self.folder, "prepare", task.task_id, "git clone of a repository that is not there"
        ):
            import tempfile

            with tempfile.TemporaryDirectory(prefix="chaos-clone-") as tmp:
                subprocess.run(["git", "clone", "-q", f"{task.repo.url}.gone", tmp], check=True, capture_output=True)
        return self._inner.prepare(task)

    def open(self, task: Any, labels: dict[str, str] | None = None) -> Any:
        rid = (labels or {}).get("rollout", "")
        if rid in self.open_targets and mark_once(self.folder, "open", rid, "connection reset at sandbox start"):
            connection_reset()
        return self._inner.open(task, labels)


class ChaosService:
    """A ``Factories.server`` that starts the run's model server as agentbon starts one (``LocalServer``: launch a
    process, wait until ``GET /models`` answers), on the scripted server's port: the process stands in for the
    server's. With ``fail_start``, the first start's process dies while loading (exit 1, a CUDA error in its log) on a
    port nothing else listens on, so the start fails as a real one would."""

    def __init__(self, config: Any, server_url: str = "", folder: str = "", fail_start: bool = False):
        from agentbon.models.service import ModelService

        self.config, self.url, self.folder, self.fail_start = config, server_url, folder, fail_start
        self._service = ModelService(config)
        self._service.local_server = self._local_server  # type: ignore[method-assign]

    def _local_server(self, config: Any, host: str, api_key: str | None) -> Any:
        import sys
        from urllib.parse import urlparse

        from agentbon.models.server import LocalServer, free_port

        crash = self.fail_start and mark_once(self.folder, "server-start", "model", "server process died loading")
        code = (
            "import sys; print('RuntimeError: CUDA error: out of memory while loading the weights'); sys.exit(1)"
            if crash else "import time; time.sleep(1e9)"
        )  # fmt: skip
        port = free_port(host) if crash else urlparse(self.url).port
        assert port is not None
        log = Path(self.folder) / "chaos-model.log"  # removed with the bench's folder
        return LocalServer([sys.executable, "-c", code], port=port, name="chaos-model", ready_timeout_s=30, host=host,
                           log_path=log)  # fmt: skip

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__dict__["_service"], name)
