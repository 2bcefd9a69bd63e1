"""Task images: the repository at its base commit in the workdir, dependencies installed, setup run.

Layered on the base image with ``docker build`` and cached by content (base image id + resolved base commit +
the generated build files) in the tag ``agentbon/task:<task>-<hash>``. The gold patch and hidden tests never
enter an image: only ``task.repo`` and ``task.environment`` are read here.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import docker

from agentbon.errors import ImageBuildError
from agentbon.sandbox.base import HOST_CA_BUNDLE, _has_image, ensure_base_image, registry_reachable
from agentbon.sandbox.common import file_lock, slug
from agentbon.sandbox.harden import DEFAULT_UID, RunAs, owner_fixup, user_entries
from agentbon.sandbox.repo import prepare_repo, resolve_commit
from agentbon.types import Task

log = logging.getLogger(__name__)

TASK_REPO = "agentbon/task"
BUILD_DIR = "/tmp/agentbon-build"
USER_LABEL = "agentbon.user"
"""Label of a task image agentbon built: the ``uid:gid`` that owns its repository and has a passwd entry."""
IMAGE_USER = RunAs(DEFAULT_UID, DEFAULT_UID)
PIP_PASSTHROUGH = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL")
"""Host pip settings forwarded to the build when they point at a network index (not a host path)."""


@dataclass(frozen=True)
class TaskImage:
    """An image a task's sandboxes start from."""

    ref: str
    base_commit: str
    """Full sha the repository is at (as given, for a prebuilt image)."""
    workdir: str
    built: bool = False
    """True when this call built it; False when it came from the cache or was prebuilt."""
    build_s: float = 0.0
    env: tuple[tuple[str, str], ...] = ()
    """The task's ``environment.env``, set in every container started from this image."""


def _env(task: Task) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(task.environment.env.items()))


def _build_script(task: Task, ca: bool) -> str:
    env = task.environment
    lines = ["#!/bin/bash", "set -e", f"trap 'rm -rf {BUILD_DIR}' EXIT"]
    if ca:  # the host's CA bundle, for a TLS-intercepting proxy; only this build step sees it
        bundle = f"{BUILD_DIR}/ca.crt"
        lines.append(
            " ".join(
                ["export"]
                + [
                    f"{v}={bundle}"
                    for v in ("PIP_CERT", "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE")
                ]
            )
        )
    if env.python_packages:
        lines.append(f"python3 -m pip install --no-cache-dir -r {BUILD_DIR}/requirements.txt")
    lines += [f"export {name}={shlex.quote(value)}" for name, value in sorted(env.env.items())]
    lines += ["set -x", f"cd {shlex.quote(env.workdir)}", *env.setup]
    return "\n".join(lines) + "\n"


def _dockerfile(task: Task, base: str, sha: str, build_step: bool, build_args: list[str]) -> str:
    workdir = task.environment.workdir
    lines = [
        f"FROM {base}",
        "RUN git config --system user.name agentbon && git config --system user.email agentbon@localhost"
        " && git config --system --add safe.directory '*' && git config --system advice.detachedHead false",
        # The sandbox's unprivileged user owns the repository (docs/security.md, "Sandbox hardening").
        "RUN " + " && ".join(user_entries(IMAGE_USER)),
        f"COPY --chown={IMAGE_USER.spec} repo {workdir}",
        f"WORKDIR {workdir}",
        f'RUN test "$(git rev-parse HEAD)" = {sha} && (git update-index -q --refresh >/dev/null || true)',
    ]
    if build_step:
        # The host's CA bundle comes in with the build files and build.sh deletes them when it ends, so no
        # container ever trusts the network's TLS proxy. (The legacy builder has no secret mounts: the bundle,
        # public certificates only, stays in that one intermediate layer's history, not in any filesystem.)
        lines += [f"ARG {name}" for name in build_args]
        lines += [f"COPY agentbon-build {BUILD_DIR}", f"RUN bash {BUILD_DIR}/build.sh"]
        lines.append(f"RUN {owner_fixup(IMAGE_USER, workdir)}")  # what the build made there, as root
    return "\n".join(lines) + "\n"


def _spec(task: Task, base: str, sha: str) -> tuple[dict[str, str], dict[str, str]]:
    """The build files (name → text) and build args; their hash is the image's cache key."""
    env = task.environment
    build_step = bool(env.python_packages or env.setup)
    args = {n: os.environ[n] for n in PIP_PASSTHROUGH if os.environ.get(n, "").startswith(("http://", "https://"))}
    ca = build_step and HOST_CA_BUNDLE.is_file()
    files = {"Dockerfile": _dockerfile(task, base, sha, build_step, sorted(args))}
    if build_step:
        files["agentbon-build/build.sh"] = _build_script(task, ca)
        files["agentbon-build/requirements.txt"] = "".join(f"{p}\n" for p in env.python_packages)
    return files, args


def _key(base_id: str, sha: str, files: dict[str, str], args: dict[str, str]) -> str:
    digest = hashlib.sha256(f"{base_id}\0{sha}\0".encode())
    for name in sorted(files):
        digest.update(f"{name}\0{files[name]}\0".encode())
    for name in sorted(args):
        digest.update(f"{name}={args[name]}\0".encode())
    return digest.hexdigest()[:12]


def _tag(task: Task, key: str) -> str:
    return f"{TASK_REPO}:{slug(task.task_id, 80)}-{key}"


def _prebuilt(client: docker.DockerClient, task: Task) -> TaskImage:
    image = task.environment.image or ""
    if not _has_image(client, image):
        if not registry_reachable(client):
            raise ImageBuildError(
                f"{task.source or task.task_id}: environment.image {image!r} is not in the engine "
                "and no registry is reachable to pull it"
            )
        try:
            client.images.pull(image)
        except docker.errors.APIError as e:
            raise ImageBuildError(
                f"{task.source or task.task_id}: environment.image {image!r}: pull failed: {e}"
            ) from e
    return TaskImage(ref=image, base_commit=task.repo.base_commit, workdir=task.environment.workdir, env=_env(task))


def _build(client: docker.DockerClient, task: Task, context: Path, tag: str, sha: str, args: dict[str, str]) -> None:
    tail: list[str] = []
    labels = {
        "agentbon.image": "task",
        "agentbon.task_id": task.task_id,
        "agentbon.base_commit": sha,
        "agentbon.workdir": task.environment.workdir,
        USER_LABEL: IMAGE_USER.spec,
    }
    try:
        stream = client.api.build(
            path=str(context), tag=tag, rm=True, forcerm=True, decode=True, pull=False, buildargs=args, labels=labels
        )
        for item in stream:
            if "error" in item:
                raise ImageBuildError(
                    f"{task.task_id}: task image build failed: {item['error'].strip()}\n" + "".join(tail[-30:])
                )
            if item.get("stream", "").strip():
                tail.append(re.sub(r"\x1b\[[0-9;]*m", "", item["stream"]))  # no terminal colours in messages
    except docker.errors.APIError as e:
        raise ImageBuildError(f"{task.task_id}: task image build failed: {e}") from e


def task_image(client: docker.DockerClient, task: Task, say: Callable[[str], None] | None = None) -> TaskImage:
    """The task's image: prebuilt (``environment.image``), cached by content hash, or built now."""
    if task.environment.image:
        return _prebuilt(client, task)
    say = say or log.info
    base = ensure_base_image(client, say=say)
    base_id = client.images.get(base).id
    sha = resolve_commit(task.repo.url, task.repo.base_commit)
    if sha is not None:
        files, args = _spec(task, base, sha)
        tag = _tag(task, _key(base_id, sha, files, args))
        if _has_image(client, tag):
            return TaskImage(ref=tag, base_commit=sha, workdir=task.environment.workdir, env=_env(task))
    with tempfile.TemporaryDirectory(prefix="agentbon-build-") as tmp:
        context = Path(tmp)
        started = time.monotonic()
        sha = prepare_repo(task.repo.url, task.repo.base_commit, context / "repo")
        files, args = _spec(task, base, sha)
        tag = _tag(task, _key(base_id, sha, files, args))
        with file_lock(tag):
            if _has_image(client, tag):  # built by another process meanwhile
                return TaskImage(ref=tag, base_commit=sha, workdir=task.environment.workdir, env=_env(task))
            for name, text in files.items():
                (context / name).parent.mkdir(parents=True, exist_ok=True)
                (context / name).write_text(text)
            if "agentbon-build/build.sh" in files and HOST_CA_BUNDLE.is_file():
                shutil.copyfile(HOST_CA_BUNDLE, context / "agentbon-build" / "ca.crt")
            say(f"building {tag}")
            _build(client, task, context, tag, sha, args)
        return TaskImage(
            ref=tag,
            base_commit=sha,
            workdir=task.environment.workdir,
            built=True,
            build_s=time.monotonic() - started,
            env=_env(task),
        )
