"""The second, independent check of the FAIL_TO_PASS tests (stdlib only; Python 3.6+; docs/security.md, "Second check").

Usage: ``python3 -I second_check.py SPEC.json`` from the repository root of a sandbox opened fresh for this
check. The spec (read, then deleted before any code of the repository runs) holds the ids, the runner, the
plugins, the time limit and the verifier's nonce. This driver never imports the repository's code: it makes
itself non-dumpable (the test process cannot read its memory or open its file descriptors), starts
``second_child.py`` with a pipe on a random descriptor and a nonce of its own (handed over on the child's
stdin), collects the records the child writes from inside each test's own call, kills whatever the child
left behind, and prints one line ``AGENTBON-SECOND-CHECK <verifier nonce> <json>``: the outcome of each id, in order
(short, so that the sandbox's cap on output cannot cut it).
No JUnit XML, no result file, no exit code is read.
"""

import ctypes
import json
import os
import random
import secrets
import select
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import agentbon_supervise as sup  # noqa: E402  (process clean-up and the environment only)

MARK = "AGENTBON-SECOND-CHECK"
PR_SET_DUMPABLE = 4
MAX_RECORD_BYTES = 1 << 20


def non_dumpable():
    """No ptrace, no /proc/<pid>/mem or /fd of this process for processes without CAP_SYS_PTRACE."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def random_fd(fd):
    """``fd`` moved to a free descriptor number picked at random (so the test process cannot guess it)."""
    for _ in range(64):
        target = random.SystemRandom().randrange(64, 1000)
        try:
            os.fstat(target)
        except OSError:
            os.dup2(fd, target, inheritable=True)
            os.close(fd)
            return target
    os.set_inheritable(fd, True)
    return fd


def outcome(events):
    """One id's outcome from its records: every call returned, at least one, none raised."""
    if not events:
        return "missing"
    if any(e.startswith("fail") for e in events):
        return "failed"
    calls, passes = events.count("call"), events.count("pass")
    return "passed" if passes and calls == passes else "error"


def main():
    non_dumpable()
    path = sys.argv[1]
    with open(path, encoding="utf-8") as f:
        spec = json.load(f)
    try:
        os.unlink(path)
    except OSError:
        pass
    sup.become_subreaper()
    ids = spec["ids"]
    nonce = secrets.token_hex(16)
    read_end, write_end = os.pipe()
    write_end = random_fd(write_end)
    env = sup.clean_env()
    if spec.get("plugin_autoload"):
        env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    here = os.path.dirname(os.path.abspath(__file__))
    child = [spec.get("python") or sys.executable, "-B", os.path.join(here, "second_child.py")]
    started = time.time()
    proc = subprocess.Popen(
        child,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=(write_end,),
        start_new_session=True,
    )
    os.close(write_end)
    handover = {k: spec.get(k) for k in ("runner", "ids", "plugins", "plugin_autoload", "files", "settings")}
    if spec.get("no_cache"):  # SymPy's bin/test -C, before the child imports anything
        env["SYMPY_USE_CACHE"] = "no"
    handover.update(fd=write_end, nonce=nonce)
    try:
        proc.stdin.write(json.dumps(handover).encode())
        proc.stdin.close()
    except OSError:  # the child died at once: its records are simply missing
        pass
    tail = sup.OutputTail(4000)
    pump = threading.Thread(target=lambda: [tail.feed(c) for c in iter(lambda: proc.stdout.read(65536), b"")])
    pump.daemon = True
    pump.start()
    records, timed_out = bytearray(), False
    deadline = started + float(spec["timeout_s"])
    open_end = True
    while open_end and len(records) < MAX_RECORD_BYTES:
        left = deadline - time.time()
        if left <= 0:
            timed_out = proc.poll() is None
            break
        ready, _, _ = select.select([read_end], [], [], min(left, 0.5))
        if ready:
            chunk = os.read(read_end, 65536)
            records += chunk
            open_end = bool(chunk)
        elif proc.poll() is not None:  # exited; a straggler holding the pipe open is killed below
            break
    try:
        os.killpg(proc.pid, 9)
    except OSError:
        pass
    code = proc.wait()
    sup.kill_tree(os.getpid())
    while len(records) < MAX_RECORD_BYTES and select.select([read_end], [], [], 0)[0]:
        chunk = os.read(read_end, 65536)
        if not chunk:
            break
        records += chunk
    os.close(read_end)
    pump.join(2.0)
    events = {i: [] for i in range(len(ids))}
    for line in bytes(records).decode("utf-8", "replace").splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[0] == nonce and parts[1].isdigit() and int(parts[1]) in events:
            events[int(parts[1])].append(parts[2])
    report = {
        "outcomes": [outcome(events[i]) for i in range(len(ids))],  # in the order of the spec's ids
        "exit_code": code,
        "timed_out": timed_out,
        "duration_s": round(time.time() - started, 3),
        "output": tail.text()[-1000:],
    }
    sys.stdout.write("\n{} {} {}\n".format(MARK, spec["nonce"], json.dumps(report)))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
