"""Check that every image the tasks start from is in the engine, or can be pulled or built there.

A prebuilt image (``environment.image``) that is missing is asked of the registry (through the engine, which
knows its mirrors and logins): one the registry has is pulled at first use (a warning); one it does not have,
or any missing image with no registry reachable, stops the run before anything is recorded, naming the
command that gets it (``agentbon sandbox build SUITE``). ``agentbon eval`` runs the same check.
"""

from __future__ import annotations

import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentbon.errors import ImageBuildError
from agentbon.preflight.base import Context, Problem

REGISTRY_LOOKUPS = 16
"""Registry lookups at once (one per missing image: a SWE-bench suite names hundreds)."""


def _has(client: object, ref: str) -> bool:
    from agentbon.sandbox.base import _has_image

    return _has_image(client, ref)  # type: ignore[arg-type]


def _registry(ctx: Context) -> bool:
    from agentbon.sandbox.base import registry_reachable

    return bool(ctx.once("registry", lambda: registry_reachable(ctx.client())))


def suite_of(ctx: Context) -> str:
    """The suite the tasks were loaded from, for the commands a fix names (``SUITE`` where that is unclear)."""
    files = {re.sub(r"(:\d+|\[\d+\])$", "", t.source) for t in ctx.tasks if t.source}
    if not files:
        return "SUITE"
    if all(Path(f).name == "task.yaml" for f in files):  # task folders: the one folder, or the suite folder above
        folders = {Path(f).parent for f in files}
        files = {str(folders.pop())} if len(folders) == 1 else {str(d.parent) for d in folders}
    return files.pop() if len(files) == 1 else "SUITE"


def _in_registry(client: object, image: str) -> str | None:
    """None where the registry has ``image``; else why not (``unknown: ...`` where it could not be told)."""
    import docker
    import requests

    try:
        client.api.inspect_distribution(image)  # type: ignore[attr-defined]
        return None
    except docker.errors.NotFound as e:
        return f"not in the registry ({e.explanation or e})"
    except docker.errors.APIError as e:
        text = str(e.explanation or e)
        if any(word in text.lower() for word in ("not found", "manifest unknown", "denied", "unauthorized")):
            return f"not in the registry, or it needs a login ({text})"
        return f"unknown: {text}"
    except (requests.RequestException, OSError) as e:
        return f"unknown: {type(e).__name__}: {e}"


def _listed(images: dict[str, list[str]]) -> str:
    return "; ".join(
        f"{image} (tasks {', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''})" for image, ids in sorted(images.items())
    )


def check_images(ctx: Context) -> list[Problem]:
    """Prebuilt task images (``environment.image``) present, or in a registry that answers (pulled at first use);
    the base image present or buildable. A missing image that cannot be got stops the run before it starts."""
    client = ctx.client() if ctx.uses_docker() else None
    if client is None:
        return []
    problems: list[Problem] = []
    prebuilt: dict[str, list[str]] = {}
    for task in ctx.tasks:
        if task.environment.image:
            prebuilt.setdefault(task.environment.image, []).append(task.task_id)
    missing = {image: ids for image, ids in prebuilt.items() if not _has(client, image)}
    build = f"agentbon sandbox build {suite_of(ctx)}"
    if missing and _registry(ctx):
        with ThreadPoolExecutor(REGISTRY_LOOKUPS) as pool:
            why = dict(zip(missing, pool.map(lambda image: _in_registry(client, image), missing), strict=True))
        absent = {image: ids for image, ids in missing.items() if not (why[image] or "unknown").startswith("unknown")}
        pullable = {image: ids for image, ids in missing.items() if image not in absent}
        if absent:
            reasons = "; ".join(f"{image}: {why[image]}" for image in sorted(absent)[:5])
            problems.append(
                Problem(
                    check="images",
                    cause=f"{len(absent)} task image(s) not in the engine and not to be pulled: {_listed(absent)} "
                    f"[{reasons}]",
                    fix=f"{build} (builds SWE-bench instance images with the harness where swebench is installed); "
                    "or build them elsewhere and docker load them here",
                )
            )
        if pullable:
            pulls = " && ".join(f"docker pull {image}" for image in sorted(pullable))
            problems.append(
                Problem(
                    check="images",
                    fatal=False,
                    cause=f"task images not in the engine yet, pulled at first use: {_listed(pullable)}",
                    fix=f"pull them ahead of the run: {build} (or {pulls})",
                )
            )
    elif missing:
        pulls = " && ".join(f"docker pull {image}" for image in sorted(missing))
        problems.append(
            Problem(
                check="images",
                cause=f"{len(missing)} task image(s) not in the engine and no registry reachable to pull them: "
                f"{_listed(missing)}",
                fix=f"{build} (builds SWE-bench instance images with the harness where swebench is installed); "
                f"or on a machine with a registry: {pulls}, and bring them here with docker save | docker load",
            )
        )
    if not ctx.tasks or any(not task.environment.image for task in ctx.tasks):  # some are built on the base
        problems += _base(ctx)
    return problems


def _base(ctx: Context) -> list[Problem]:
    """The base image the task images are built on: present, else buildable here (recipe plus a way to build it)."""
    from agentbon.sandbox.base import _from_image, base_tag, recipe_dir

    client = ctx.client()
    try:
        directory = recipe_dir()
    except ImageBuildError as e:
        return [Problem(check="images", cause=str(e), fix="set AGENTBON_SANDBOXES=<checkout>/sandboxes")]
    tag = base_tag(directory)
    if _has(client, tag):
        return []
    method = os.environ.get("AGENTBON_BASE_METHOD")
    if method != "rootfs" and (_has(client, _from_image(directory)) or _registry(ctx)):
        why = "from its Dockerfile"
    elif method != "dockerfile" and os.geteuid() == 0 and shutil.which("debootstrap"):
        why = "with debootstrap + docker import"
    else:
        return [
            Problem(
                check="images",
                cause=f"base image {tag} is not in the engine and cannot be built here: no "
                f"registry answers for its FROM image {_from_image(directory)}, and the offline build needs "
                "root and debootstrap",
                fix="as root: apt-get install -y debootstrap && agentbon sandbox base; "
                f"or docker load an image tagged {tag}",
            )
        ]
    return [
        Problem(
            check="images",
            fatal=False,
            cause=f"base image {tag} is not built yet: the run builds it first ({why}; minutes)",
            fix="build it ahead: agentbon sandbox base",
        )
    ]
