"""The base image every task image is layered on: ``agentbon/base:<hash of the recipe in sandboxes/base>``.

Two ways to build the same image (sandboxes/base/): the Dockerfile where a registry is reachable (or its
``FROM`` image is already present), else a ``debootstrap`` rootfs ``docker import``-ed by build-rootfs.sh.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import ssl
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import docker
import httpx

from agentbon.errors import ImageBuildError
from agentbon.sandbox.common import file_lock

log = logging.getLogger(__name__)

BASE_REPO = "agentbon/base"
RECIPE_FILES = ("Dockerfile", "packages.txt", "build-rootfs.sh")
HOST_CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
Method = Literal["auto", "dockerfile", "rootfs"]


def recipe_dir() -> Path:
    """Where the base recipe lives: ``$AGENTBON_SANDBOXES/base`` or ``sandboxes/base`` in the source tree."""
    root = os.environ.get("AGENTBON_SANDBOXES")
    directory = Path(root) / "base" if root else Path(__file__).resolve().parents[2] / "sandboxes" / "base"
    missing = [name for name in RECIPE_FILES if not (directory / name).is_file()]
    if missing:
        raise ImageBuildError(
            f"base image recipe not found in {directory} (missing {', '.join(missing)}); "
            "set AGENTBON_SANDBOXES to the sandboxes/ folder of an agentbon checkout"
        )
    return directory


def base_tag(directory: Path | None = None) -> str:
    """``agentbon/base:<first 12 hex of sha256 over the recipe files>``: a new recipe is a new image."""
    directory = directory or recipe_dir()
    digest = hashlib.sha256()
    for name in RECIPE_FILES:
        digest.update(name.encode() + b"\0" + (directory / name).read_bytes() + b"\0")
    return f"{BASE_REPO}:{digest.hexdigest()[:12]}"


def _has_image(client: docker.DockerClient, ref: str) -> bool:
    try:
        client.images.get(ref)
        return True
    except docker.errors.ImageNotFound:
        return False


def registry_reachable(client: docker.DockerClient, timeout: float = 3.0) -> bool:
    """A quick check that a registry (the engine's mirrors, else Docker Hub) answers at all."""
    mirrors = (client.info().get("RegistryConfig") or {}).get("Mirrors") or []
    verify = ssl.create_default_context(cafile=str(HOST_CA_BUNDLE) if HOST_CA_BUNDLE.is_file() else None)
    for url in [*(m.rstrip("/") + "/v2/" for m in mirrors), "https://registry-1.docker.io/v2/"]:
        try:
            httpx.get(url, timeout=timeout, verify=verify)
            return True  # any HTTP answer (401 included) means it is there
        except httpx.HTTPError:
            continue
    return False


def _from_image(directory: Path) -> str:
    match = re.search(r"^FROM\s+(\S+)", (directory / "Dockerfile").read_text(), re.MULTILINE)
    return match.group(1) if match else "debian:bookworm-slim"


def choose_method(client: docker.DockerClient, directory: Path) -> Literal["dockerfile", "rootfs"]:
    """The Dockerfile when its ``FROM`` image is present or a registry answers; else the debootstrap import."""
    if _has_image(client, _from_image(directory)) or registry_reachable(client):
        return "dockerfile"
    return "rootfs"


def _build_dockerfile(client: docker.DockerClient, directory: Path, tag: str, say: Callable[[str], None]) -> None:
    tail: list[str] = []
    try:
        for item in client.api.build(path=str(directory), tag=tag, rm=True, forcerm=True, decode=True, pull=False):
            if "error" in item:
                raise ImageBuildError(f"base image build failed: {item['error'].strip()}\n" + "".join(tail[-20:]))
            line = item.get("stream", "")
            if line.strip():
                tail.append(line)
                if line.startswith("Step "):
                    say(line.rstrip())
    except docker.errors.APIError as e:
        raise ImageBuildError(f"base image build failed: {e}") from e


def _build_rootfs(directory: Path, tag: str) -> None:
    if os.geteuid() != 0:
        raise ImageBuildError("building the base image without a registry needs root (debootstrap): run as root")
    if shutil.which("debootstrap") is None:
        raise ImageBuildError("debootstrap is not installed: apt-get install -y debootstrap")
    proc = subprocess.run(
        ["bash", str(directory / "build-rootfs.sh"), tag], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise ImageBuildError(f"build-rootfs.sh failed (exit {proc.returncode}):\n{proc.stderr[-4000:]}")


def build_base_image(
    client: docker.DockerClient, tag: str, method: Method = "auto", say: Callable[[str], None] | None = None
) -> float:
    """Build the base recipe into ``tag`` now (no cache check); return the seconds it took."""
    say = say or log.info
    directory = recipe_dir()
    chosen = os.environ.get("AGENTBON_BASE_METHOD") or (
        choose_method(client, directory) if method == "auto" else method
    )
    say(f"building {tag} ({'Dockerfile' if chosen == 'dockerfile' else 'debootstrap + docker import'})")
    started = time.monotonic()
    if chosen == "dockerfile":
        _build_dockerfile(client, directory, tag, say)
    elif chosen == "rootfs":
        _build_rootfs(directory, tag)
    else:
        raise ImageBuildError(f"AGENTBON_BASE_METHOD={chosen!r}: expected dockerfile or rootfs")
    if not _has_image(client, tag):
        raise ImageBuildError(f"base image build finished but {tag} is not in the engine")
    elapsed = time.monotonic() - started
    say(f"built {tag} in {elapsed:.1f}s")
    return elapsed


def ensure_base_image(
    client: docker.DockerClient, force: bool = False, method: Method = "auto", say: Callable[[str], None] | None = None
) -> str:
    """The base image's tag: reused when the engine has it, else built (Dockerfile or debootstrap import)."""
    tag = base_tag()
    if not force and _has_image(client, tag):
        return tag
    with file_lock("base-image"):
        if force or not _has_image(client, tag):  # another process may have built it while we waited
            build_base_image(client, tag, method, say)
    return tag
