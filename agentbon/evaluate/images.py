"""Every image a suite needs, made ready before a run (``agentbon sandbox build``).

For a prebuilt image (``environment.image``: SWE-bench instance images, a team's CI image), in order: the
engine has it (``ready``); a registry answers and has it, so it is pulled (``pulled``); the task is a SWE-bench
instance and the ``swebench`` package (4.x) is importable, so the harness's own image build makes it from the
suite file (``built``); else ``missing``, with why and the command that gets it. A task without a prebuilt
image gets agentbon's own task image, built on the base image from its environment recipe (``built``, or
``ready`` when cached). ``run`` and ``eval`` check the same before they start (``preflight/images.py``).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentbon.types import Task

Outcome = Literal["ready", "pulled", "built", "missing"]
HARNESS_BUILD = "swebench.harness.prepare_images"
"""The harness's image build (swebench 4.x: from a dataset name or a local JSON/JSONL of instances)."""
HARNESS5_BUILD = "swebench.image_builder.prepare_images"
"""swebench 5.x builds images from a task repository (``--task_repo``), which a suite file does not name."""
HARNESS_TIMEOUT_S = 4 * 3600.0


@dataclass
class Need:
    """One image and the tasks that start from it."""

    ref: str
    """The image reference; for an agentbon task image, ``task image of <task id>`` until it is built."""
    tasks: list[Task] = field(default_factory=list)
    prebuilt: bool = True
    """False: agentbon's own task image, built from the task's environment recipe."""


@dataclass
class Got:
    """What happened to one needed image."""

    ref: str
    task_ids: list[str]
    outcome: Outcome
    how: str = ""
    """How it was got, or why it is missing and what gets it."""
    seconds: float = 0.0


def needs(tasks: list[Task]) -> list[Need]:
    """The images the tasks start from: one per distinct prebuilt image, one per task built from a recipe."""
    prebuilt: dict[str, Need] = {}
    out: list[Need] = []
    for task in tasks:
        image = task.environment.image
        if image:
            if image not in prebuilt:
                prebuilt[image] = Need(image)
                out.append(prebuilt[image])
            prebuilt[image].tasks.append(task)
        else:
            out.append(Need(f"task image of {task.task_id}", [task], prebuilt=False))
    return out


def harness_build_command(suite: str | Path, ids: list[str]) -> list[str]:
    """The harness's own build of the instance images of ``ids`` from the suite file (swebench 4.x)."""
    return [
        sys.executable, "-m", HARNESS_BUILD, "--dataset_name", str(suite), "--instance_ids", *ids,
        "--tag", "latest", "--env_image_tag", "latest", "--max_workers", "4",
    ]


def importable(module: str) -> bool:
    """True where ``module`` can be imported here (nothing is imported)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its package is not installed at all
        return False


def harness_image(instance_id: str) -> str:
    """The name the harness's local build gives an instance image (no namespace, ``__`` kept)."""
    return f"sweb.eval.x86_64.{instance_id.lower()}:latest"


class Getter:
    """Gets needed images ready in one engine; ``say`` reports each step (progress)."""

    def __init__(self, client: Any, suite: str | Path, say: Callable[[str], None] | None = None):
        self.client, self.suite = client, Path(suite)
        self.say = say or (lambda line: None)
        self._registry: bool | None = None

    def registry(self) -> bool:
        """A registry answers (asked once; a few seconds at most)."""
        if self._registry is None:
            from agentbon.sandbox.base import registry_reachable

            self._registry = registry_reachable(self.client)
        return self._registry

    def get(self, need: Need) -> Got:
        """Make one needed image ready (or say why it cannot be)."""
        started = time.monotonic()
        got = self._prebuilt(need) if need.prebuilt else self._recipe(need)
        got.seconds = round(time.monotonic() - started, 1)
        return got

    def _has(self, ref: str) -> bool:
        from agentbon.sandbox.base import _has_image

        return _has_image(self.client, ref)

    def _prebuilt(self, need: Need) -> Got:
        import docker

        ids = [t.task_id for t in need.tasks]
        if self._has(need.ref):
            return Got(need.ref, ids, "ready", "in the engine")
        why = "no registry answers"
        if self.registry():
            self.say(f"pulling {need.ref}")
            try:
                self.client.images.pull(need.ref)
                return Got(need.ref, ids, "pulled", "from the registry")
            except docker.errors.APIError as e:
                why = f"pull failed: {getattr(e, 'explanation', None) or e}"
        swebench = [t for t in need.tasks if t.kind == "swebench"]
        if swebench and self.suite.suffix in (".json", ".jsonl"):
            command = harness_build_command(self.suite, [t.task_id for t in swebench])
            if importable(HARNESS_BUILD):
                return self._harness(need, ids, command, why)
            local = harness_image(swebench[0].task_id)
            if importable(HARNESS5_BUILD):
                how = (
                    f"{why}; swebench 5.x builds from a task repository: python -m {HARNESS5_BUILD} --task_repo "
                    f"<task repo> --instance_ids {' '.join(ids)}, then docker tag {local} {need.ref}"
                )
            else:
                how = (
                    f"{why}; build it with the harness (pip install 'swebench>=4,<5'): {' '.join(command[1:])}, "
                    "then run this again; or build it elsewhere and docker load it"
                )
            return Got(need.ref, ids, "missing", how)
        return Got(need.ref, ids, "missing", f"{why}; docker pull {need.ref} where a registry has it, then docker load")

    def _harness(self, need: Need, ids: list[str], command: list[str], why: str) -> Got:
        self.say(f"building {need.ref} with the SWE-bench harness")
        done = subprocess.run(command, capture_output=True, text=True, timeout=HARNESS_TIMEOUT_S)
        local = harness_image(need.tasks[0].task_id)
        if not self._has(need.ref) and self._has(local):
            repo, _, tag = need.ref.rpartition(":")
            self.client.images.get(local).tag(repo, tag)
        if self._has(need.ref):
            return Got(need.ref, ids, "built", "by the SWE-bench harness")
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        return Got(need.ref, ids, "missing", f"{why}; the harness's build failed (exit {done.returncode}): {' | '.join(tail)}")

    def _recipe(self, need: Need) -> Got:
        from agentbon.errors import AgentbonError
        from agentbon.sandbox.images import task_image

        task = need.tasks[0]
        self.say(f"task image of {task.task_id}")
        try:
            image = task_image(self.client, task, say=self.say)
        except AgentbonError as e:
            return Got(need.ref, [task.task_id], "missing", str(e).splitlines()[0][:300])
        how = "built from its environment recipe" if image.built else "cached"
        return Got(image.ref, [task.task_id], "built" if image.built else "ready", how)
