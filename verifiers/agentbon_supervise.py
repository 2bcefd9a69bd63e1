"""Supervise one test process inside the verification sandbox (stdlib only, Python 3.6+).

The runner scripts beside this file (``run_pytest.py``, ``run_unittest.py``, ``run_command.py``)
use it to start the test process in its own session, capture its output with a bounded head and
tail, enforce the time limit, kill everything the process left behind (a fork bomb, a daemon that
called ``setsid``) and write a ``result.json`` the verifier reads back. The verifier never trusts
the test process's stdout for results: results come from the JUnit XML, cross-checked with the
exit code recorded here. It also lists what the test run changed outside the repository in the
interpreter's own directories (``OutsideWatch``), which the verifier flags ``outside_write``.
"""

import collections
import ctypes
import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from xml.sax.saxutils import escape, quoteattr

PR_SET_CHILD_SUBREAPER = 36
OUTSIDE_MAX_ENTRIES = 20000
"""Entries (files and directories) the outside-write fingerprint looks at, at most, in each of its two walks."""
OUTSIDE_DEPTH = 2
"""Levels below each watched directory: its own entries, and those of its packages (``_pytest/junitxml.py``)."""
OUTSIDE_REPORTED = 50
OUTSIDE_SKIPPED = ("/proc", "/sys", "/dev", "/tmp", "/var/tmp", "/run")
# Variables that would let the candidate's repository change how the runner behaves.
DROPPED_ENV = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONBREAKPOINT")


def become_subreaper():
    """Adopt orphaned descendants so that processes which daemonise can still be found and killed."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def clean_env(extra=None):
    """The environment for the test process: runner-affecting variables dropped, bytecode writes off."""
    env = dict(os.environ)
    for name in DROPPED_ENV:
        env.pop(name, None)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    env.update(extra or {})
    return env


def _ppid(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: the fields after the last ')' are fixed.
    fields = data[data.rfind(b")") + 2 :].split()
    return int(fields[1]) if len(fields) > 1 else None


def descendants(root):
    """Every live process whose parent chain reaches ``root`` (not ``root`` itself)."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            ppid = _ppid(int(name))
            if ppid is not None:
                parents[int(name)] = ppid
    out = []
    for pid in parents:
        seen, cur = 0, parents.get(pid)
        while cur is not None and cur > 1 and seen < 4096:
            if cur == root:
                out.append(pid)
                break
            cur, seen = parents.get(cur), seen + 1
    return out


def _signal_all(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


def _reap():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def kill_tree(root, deadline_s=10.0):
    """Freeze then kill every descendant of ``root``; repeat until none is left (fork bombs race us)."""
    end = time.time() + deadline_s
    killed = 0
    while time.time() < end:
        pids = descendants(root)
        if not pids:
            break
        # SIGSTOP first so that a forking process cannot replace itself between our scan and the kill.
        _signal_all(pids, signal.SIGSTOP)
        pids = sorted(set(pids) | set(descendants(root)))
        _signal_all(pids, signal.SIGKILL)
        killed += len(pids)
        time.sleep(0.05)
        _reap()
    return killed


class OutputTail:
    """Keeps the first and last ``limit // 2`` bytes of a stream and counts the rest."""

    def __init__(self, limit):
        self.half = max(1024, limit // 2)
        self.head = b""
        self.tail = b""
        self.total = 0

    def feed(self, chunk):
        self.total += len(chunk)
        if len(self.head) < self.half:
            take = self.half - len(self.head)
            self.head += chunk[:take]
            chunk = chunk[take:]
        if chunk:
            self.tail = (self.tail + chunk)[-self.half :]

    def text(self):
        skipped = self.total - len(self.head) - len(self.tail)
        middle = b"\n... [%d bytes cut] ...\n" % skipped if skipped > 0 else b""
        return (self.head + middle + self.tail).decode("utf-8", "replace")


def interpreter_dirs():
    """Where the interpreter finds code and configuration outside any repository: ``sys.path``, the site and user
    site directories (present or not), the scripts directory and ``/etc``."""
    import site
    import sysconfig

    roots = list(sys.path)
    for name in ("getsitepackages", "getusersitepackages"):
        try:
            found = getattr(site, name)()
        except (AttributeError, OSError):  # virtualenv's old site.py lacks them
            continue
        roots.extend([found] if isinstance(found, str) else found)
    paths = sysconfig.get_paths()
    roots.extend(paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib", "scripts"))
    roots.append("/etc")
    return list(dict.fromkeys(os.path.abspath(r) for r in roots if r))


def fingerprint(roots, skip, limit=OUTSIDE_MAX_ENTRIES, depth=OUTSIDE_DEPTH):
    """``{path: (ctime, mtime, size)}`` of each root (None where absent) and what lies under it down to ``depth``
    levels, breadth first, ``skip`` subtrees left out, ``limit`` entries at most, in a fixed order, so that two walks
    over unchanged trees see the same entries. A directory's change time moves when an entry is added, removed or
    renamed in it; a file's when it is written, even if its modification time is put back."""
    seen, order = {}, sorted(set(roots))
    queue = collections.deque((r, 0) for r in order)
    rooted = set(order)
    while queue and len(seen) < limit:
        path, level = queue.popleft()
        if path in seen or any(path == s or path.startswith(s.rstrip("/") + "/") for s in skip):
            continue
        try:
            st = os.lstat(path)
        except OSError:
            seen[path] = None
            continue
        seen[path] = (st.st_ctime_ns, st.st_mtime_ns, st.st_size)
        if not stat.S_ISDIR(st.st_mode) or level >= depth:
            continue
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if len(seen) >= limit:
                break
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.path not in rooted:  # a root nested in another is walked from its own depth 0
                        queue.append((entry.path, level + 1))
                    continue
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            seen[entry.path] = (st.st_ctime_ns, st.st_mtime_ns, st.st_size)
    return seen


def outside_changes(before, after):
    """The paths that differ between two fingerprints, a directory left out where a path under it is listed."""
    changed = [p for p in set(before) | set(after) if before.get(p, 0) != after.get(p, 0)]
    parents = set()
    for path in changed:
        head = os.path.dirname(path)
        while head and head not in parents and head != "/":
            parents.add(head)
            head = os.path.dirname(head)
    return sorted(p for p in changed if p not in parents)


class OutsideWatch:
    """Fingerprints the interpreter's directories outside the repository before the test run and compares after."""

    def __init__(self, repo, skip=()):
        self.skip = [os.path.abspath(p) for p in (repo,) + tuple(skip) + OUTSIDE_SKIPPED]
        self.roots = interpreter_dirs()
        started = time.time()
        self.before = fingerprint(self.roots, self.skip)
        self.cost_s = time.time() - started

    def report(self):
        """The result fields: changed paths (first ``OUTSIDE_REPORTED``), their count, entries watched, cost."""
        started = time.time()
        changed = outside_changes(self.before, fingerprint(self.roots, self.skip))
        return {
            "outside_changes": changed[:OUTSIDE_REPORTED],
            "outside_changes_total": len(changed),
            "outside_entries": len(self.before),
            "outside_scan_ms": round((self.cost_s + time.time() - started) * 1000, 1),
        }


def supervise(argv, env, timeout_s, output_limit=20000, cwd=None):
    """Run ``argv`` in a new session; return exit code, timeout flag, duration, the output (bounded) and the
    changes it made outside the repository to the interpreter's directories (``OutsideWatch``)."""
    become_subreaper()
    watch = OutsideWatch(cwd or os.getcwd(), skip=[os.path.dirname(os.path.abspath(__file__))])
    started = time.time()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    tail = OutputTail(output_limit)

    def pump():
        while True:
            chunk = proc.stdout.read1(65536) if hasattr(proc.stdout, "read1") else proc.stdout.read(65536)
            if not chunk:
                return
            tail.feed(chunk)

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    try:
        exit_code = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        # Wait for the direct child before kill_tree reaps anything, so its status is not lost.
        exit_code = proc.wait()
    killed = kill_tree(os.getpid())
    reader.join(5.0)
    result = {
        "exit_code": exit_code,
        "timed_out": timed_out,
        "duration_s": round(time.time() - started, 3),
        "output": tail.text(),
        "output_bytes": tail.total,
        "stragglers_killed": killed,
    }
    result.update(watch.report())
    return result


def digest_files(paths):
    """sha256 of each existing file (None when absent): detects test files rewritten during the run."""
    out = {}
    for path in paths:
        try:
            with open(path, "rb") as f:
                out[path] = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            out[path] = None
    return out


def _clean(text):
    """Text without the control characters XML 1.0 forbids."""
    return "".join(ch for ch in text if ch in "\t\n\r" or ch >= " ")


def write_junit(path, cases, suite="agentbon"):
    """Write JUnit XML for ``cases``: dicts with classname, name, outcome, message, time."""
    parts = []
    counts = {"failed": 0, "error": 0, "skipped": 0}
    for case in cases:
        attrs = "classname={} name={} time={}".format(
            quoteattr(_clean(case["classname"])),
            quoteattr(_clean(case["name"])),
            quoteattr("{:.3f}".format(case.get("time", 0.0))),
        )
        outcome, message = case["outcome"], case.get("message", "")
        if outcome == "passed":
            parts.append(f"<testcase {attrs}/>")
            continue
        tag = {"failed": "failure", "error": "error"}.get(outcome, "skipped")
        kind = {"xfailed": "unittest.expectedFailure"}.get(outcome, outcome)
        counts[{"failure": "failed", "error": "error"}.get(tag, "skipped")] += 1
        parts.append(
            "<testcase {}><{} type={} message={}>{}</{}></testcase>".format(
                attrs,
                tag,
                quoteattr(kind),
                quoteattr(_clean(message[:500])),
                escape(_clean(case.get("details", ""))),
                tag,
            )
        )
    header = '<testsuite name={} tests="{}" failures="{}" errors="{}" skipped="{}">'.format(
        quoteattr(suite), len(cases), counts["failed"], counts["error"], counts["skipped"]
    )
    with open(path, "w", encoding="utf-8") as f:
        f.write(
            '<?xml version="1.0" encoding="utf-8"?>\n<testsuites>{}{}</testsuite></testsuites>\n'.format(
                header, "".join(parts)
            )
        )


def load_spec(argv):
    """The runner's spec: a JSON file named on the command line."""
    if len(argv) != 2:
        sys.stderr.write(f"usage: {argv[0]} SPEC.json\n")
        sys.exit(2)
    with open(argv[1], encoding="utf-8") as f:
        return json.load(f)


def finish(spec, result, watched_before):
    """Add the JUnit file's state and any watched file that changed during the run; write result.json."""
    junit = spec["junit"]
    result["junit_exists"] = os.path.exists(junit)
    result["junit_bytes"] = os.path.getsize(junit) if result["junit_exists"] else 0
    after = digest_files(list(watched_before))
    result["changed_during_run"] = sorted(p for p in watched_before if watched_before[p] != after[p])
    with open(spec["result"], "w", encoding="utf-8") as f:
        json.dump(result, f)
    # The verifier reads result.json; the tail printed here is only for a person reading the log.
    sys.stdout.write(result["output"][-4000:])
