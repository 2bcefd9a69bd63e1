"""Check that every image the tasks start from is in the engine, or can be pulled or built there."""

from __future__ import annotations

import os
import shutil

from agentbon.errors import ImageBuildError
from agentbon.preflight.base import Context, Problem


def _has(client: object, ref: str) -> bool:
    from agentbon.sandbox.base import _has_image

    return _has_image(client, ref)  # type: ignore[arg-type]


def _registry(ctx: Context) -> bool:
    from agentbon.sandbox.base import registry_reachable

    return bool(ctx.once("registry", lambda: registry_reachable(ctx.client())))


def check_images(ctx: Context) -> list[Problem]:
    """Prebuilt task images (``environment.image``) present or pullable; the base image present or buildable."""
    client = ctx.client() if ctx.uses_docker() else None
    if client is None:
        return []
    problems: list[Problem] = []
    prebuilt: dict[str, list[str]] = {}
    for task in ctx.tasks:
        if task.environment.image:
            prebuilt.setdefault(task.environment.image, []).append(task.task_id)
    missing = {image: ids for image, ids in prebuilt.items() if not _has(client, image)}
    if missing:
        listed = "; ".join(
            f"{image} (tasks {', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''})"
            for image, ids in sorted(missing.items())
        )
        pulls = " && ".join(f"docker pull {image}" for image in sorted(missing))
        if _registry(ctx):
            problems.append(
                Problem(
                    check="images",
                    fatal=False,
                    cause=f"task images not in the engine yet, pulled at first use: {listed}",
                    fix=f"pull them ahead of the run: {pulls}",
                )
            )
        else:
            problems.append(
                Problem(
                    check="images",
                    cause=f"task images not in the engine and no registry reachable to pull them: {listed}",
                    fix=f"on a machine with a registry: {pulls}; bring them here with docker save | docker load",
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
