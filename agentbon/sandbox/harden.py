"""Sandbox hardening as data: who runs commands, which capabilities stay, and the scripts that set the user up.

Pure functions over the config; ``docker.py`` applies them (docs/security.md, "Sandbox hardening").
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from agentbon.config import SandboxConfig

DEFAULT_UID = 10001
"""The unprivileged user of ``sandbox.user: auto`` (uid and gid), baked into the task images agentbon builds."""
USER_NAME = "agentbon"
HOME = "/home/agentbon"
ROOT = "0:0"
NOT_READY = 96
"""Exit code of the probe when the user cannot work in the sandbox (its output says why)."""


@dataclass(frozen=True)
class RunAs:
    """Who a sandbox's commands run as, and why root where root."""

    uid: int
    gid: int
    reason: str = ""
    """Why the commands run as root (empty when they do not, or root was asked for)."""

    @property
    def root(self) -> bool:
        return self.uid == 0

    @property
    def spec(self) -> str:
        """``uid:gid`` as ``docker exec --user`` takes it."""
        return f"{self.uid}:{self.gid}"


def requested(setting: str) -> RunAs:
    """The user ``sandbox.user`` asks for (``auto`` asks for the default unprivileged user)."""
    if setting == "root":
        return RunAs(0, 0, "sandbox.user is root")
    if setting == "auto":
        return RunAs(DEFAULT_UID, DEFAULT_UID)
    uid, _, gid = setting.partition(":")
    return RunAs(int(uid), int(gid or uid))


def host_options(config: SandboxConfig) -> dict[str, Any]:
    """``create_host_config`` keyword arguments for the capability and privilege settings."""
    options: dict[str, Any] = {}
    if config.drop_capabilities:
        options["cap_drop"] = ["ALL"]
        options["cap_add"] = list(config.cap_add) or None
    if config.no_new_privileges:
        options["security_opt"] = ["no-new-privileges"]
    return options


def setup_script(run_as: RunAs, workdir: str) -> str:
    """Root shell that makes ``run_as`` a user of this container and hands it the repository.

    A passwd and group entry when the image has none (tools that look the user up: git, pip, getpass), a home,
    git's ``safe.directory`` so root's housekeeping may work in a repository it does not own, and the
    repository's files chowned where they are not the user's already (only those: each one chowned is copied
    into the container's writable layer).
    """
    safe = (
        "! command -v git >/dev/null || git config --system --get-all safe.directory | grep -qx '[*]' "
        "|| git config --system --add safe.directory '*'"
    )
    return "\n".join(["set -e", *user_entries(run_as), safe, owner_fixup(run_as, workdir)]) + "\n"


def user_entries(run_as: RunAs) -> list[str]:
    """One-line root commands: a group and passwd entry for the user where there is none, and its home."""
    u, g = run_as.uid, run_as.gid
    entry = f"{USER_NAME}:x:{u}:{g}:agentbon sandbox user:{HOME}:/bin/bash"
    return [
        f"(grep -q '^[^:]*:[^:]*:{g}:' /etc/group || echo '{USER_NAME}:x:{g}:' >> /etc/group)",
        f"(grep -q '^[^:]*:[^:]*:{u}:' /etc/passwd || echo '{entry}' >> /etc/passwd)",
        f"home=$(grep '^[^:]*:[^:]*:{u}:' /etc/passwd | head -n 1 | cut -d: -f6)",
        f'mkdir -p "$home" && chown {u}:{g} "$home"',
    ]


def owner_fixup(run_as: RunAs, workdir: str) -> str:
    """Shell that gives the user back every file under ``workdir`` that is not already its own."""
    u, g = run_as.uid, run_as.gid
    return f"find {shlex.quote(workdir)} -xdev \\( \\! -uid {u} -o \\! -gid {g} \\) -exec chown -h {u}:{g} {{}} +"


def as_root_in_repo(command: str, run_as: RunAs, workdir: str) -> str:
    """``command`` for a root exec in a sandbox whose user is not root: what it wrote in the repository goes back
    to the user (in a subshell, so an ``exit`` in the command still leaves the fix-up to run)."""
    return f"(\n{command}\n); rc=$?; {owner_fixup(run_as, workdir)} 2>/dev/null; exit $rc"


PROBE = (
    'why=""; [ -w "${HOME:-/nonexistent}" ] || why="$why home ${HOME:-unset} not writable;"\n'
    '[ -w . ] || why="$why repository $(pwd) not writable;"\n'
    "PY=$(command -v python3 || command -v python || true)\n"
    'if [ -n "$PY" ] && ! "$PY" -c pass 2>/dev/null; then why="$why interpreter $PY cannot run;"; fi\n'
    f'if [ -n "$why" ]; then echo "$why"; exit {NOT_READY}; fi'
)
"""Run as the user in the repository: what keeps it from working there (HOME, the repository, the interpreter)."""
