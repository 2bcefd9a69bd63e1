"""Plant the verifier's canary tests just before the test process starts, remove them as soon as it ends (stdlib only).

The spec's ``canaries`` (``agentbon/verify/canary.py`` writes them) name each module's path, relative to the
repository root, and its source. A directory that does not exist is created and removed again. The digests of
the planted files are taken right after writing, so a file changed during the run is reported
(``canaries_changed`` in result.json); the verifier then calls the session forged (docs/security.md, "Canaries").
"""

import hashlib
import os


class Planted:
    """The files and directories planted for one run."""

    def __init__(self):
        self.files = []
        self.dirs = []
        self.digests = {}


def _digest(path):
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def plant(spec):
    """Write the spec's canary modules; what was planted (an empty Planted when the spec has none)."""
    planted = Planted()
    for entry in (spec.get("canaries") or {}).get("files", []):
        path = entry["path"]
        folder = os.path.dirname(path)
        missing = []
        while folder and not os.path.isdir(folder):
            missing.append(folder)
            folder = os.path.dirname(folder)
        for d in reversed(missing):
            os.mkdir(d)
            planted.dirs.append(d)
        with open(path, "x", encoding="utf-8") as f:
            f.write(entry["source"])
        planted.files.append(path)
        planted.digests[path] = _digest(path)
    return planted


def ids(spec):
    """The canaries' test ids (unittest runs them by id)."""
    return list((spec.get("canaries") or {}).get("ids", []))


def remove(planted):
    """Delete the planted files (and the directories made for them); the paths whose content changed meanwhile."""
    changed = [p for p in planted.files if _digest(p) != planted.digests[p]]
    for path in planted.files:
        try:
            os.unlink(path)
        except OSError:
            pass
        _drop_pycache(path)
    for d in reversed(planted.dirs):
        try:
            os.rmdir(d)
        except OSError:  # the run left files in it: leave them (they are the candidate's, not ours)
            pass
    return changed


def _drop_pycache(path):
    """Remove the bytecode of ``path`` (bytecode writes are off, but a plugin may turn them on)."""
    cache_dir = os.path.join(os.path.dirname(path), "__pycache__")
    stem = os.path.splitext(os.path.basename(path))[0] + "."
    try:
        names = os.listdir(cache_dir)
    except OSError:
        return
    for name in names:
        if name.startswith(stem):
            try:
                os.unlink(os.path.join(cache_dir, name))
            except OSError:
                pass
