"""One command as a host process: ``timeout -k``, rlimits through ``prlimit``, a network namespace where allowed."""

from __future__ import annotations

import functools
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

from agentbon.sandbox.common import KILL_GRACE_S, OutputCap, is_timeout, timeout_argv
from agentbon.types import ExecResult

BACKSTOP_S = 15.0
LINGER_S = 0.5


@functools.cache
def netns_prefix() -> tuple[str, ...]:
    """``unshare -rn`` (or ``unshare -n`` as root) when this machine allows it; () when it does not."""
    if shutil.which("unshare") is None:
        return ()
    for prefix in (("unshare", "-rn"), ("unshare", "-n")):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=10).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            continue
    return ()


def _user_processes() -> int:
    uid, count = os.getuid(), 0
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and entry.stat().st_uid == uid:
                count += 1
        except OSError:
            continue
    return count


def limits_prefix(memory_bytes: int, cpu_s: float, pids: int) -> list[str]:
    """``prlimit`` arguments: address space, CPU seconds and (not as root, which ignores it) processes."""
    if shutil.which("prlimit") is None:
        return []
    args = ["prlimit", f"--as={memory_bytes}", f"--cpu={int(cpu_s) + 1}"]
    if os.getuid() != 0:  # RLIMIT_NPROC counts all of the user's processes, so leave room for those running
        args.append(f"--nproc={_user_processes() + pids}")
    return [*args, "--"]


def session_processes(sessions: set[int], root: str) -> list[int]:
    """Pids in one of ``sessions`` or with a working directory under ``root`` (what a sandbox left running)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            stat = (entry / "stat").read_text()
            session = int(stat.rsplit(")", 1)[1].split()[3])
            cwd = os.readlink(entry / "cwd") if session not in sessions else root
        except (OSError, ValueError, IndexError):
            continue
        if session in sessions or cwd == root or cwd.startswith(root.rstrip("/") + "/"):
            found.append(int(entry.name))
    return found


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            continue


def run_process(
    command: str, timeout: float, cwd: str, env: dict[str, str], prefix: list[str], output_limit: int
) -> tuple[ExecResult, int]:
    """Run ``command`` in a new session; return its result and the session id (for cleanup)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [*prefix, *timeout_argv(command, timeout)],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None
    fd, cap = proc.stdout.fileno(), OutputCap(output_limit)
    deadline, ended, abandoned = started + timeout + KILL_GRACE_S + BACKSTOP_S, None, False
    while True:
        now = time.monotonic()
        if now > deadline:
            abandoned = True
            os.killpg(proc.pid, signal.SIGKILL)
            break
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            cap.feed(chunk)
        if ended is None and proc.poll() is not None:
            ended = now
        if ended is not None and now - ended > LINGER_S:  # a background process holds the pipe: stop reading
            break
    proc.stdout.close()
    code = proc.wait()
    exit_code = -1 if abandoned else (128 - code if code < 0 else code)
    duration = time.monotonic() - started
    timed_out = abandoned or is_timeout(exit_code, duration, timeout)
    output = cap.text() + (f"\n[agentbon: command timed out after {timeout:g}s and was killed]" if timed_out else "")
    result = ExecResult(
        exit_code=exit_code, output=output, timed_out=timed_out, truncated=cap.truncated, duration_s=round(duration, 3)
    )
    return result, proc.pid
