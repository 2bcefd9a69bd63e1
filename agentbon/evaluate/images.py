"""Every image a suite needs, made ready before a run (``agentbon sandbox build``).

For a prebuilt image (``environment.image``: SWE-bench instance images, a team's CI image), in order: the
engine has it (``ready``); a registry answers and has it, so it is pulled (``pulled``); the task is a SWE-bench
instance whose image recipe the harness can reach, so the harness's own image build makes it (``built``):

- swebench 5.x builds from a task repository (``tasks/<id>/Dockerfile``): the suite itself when it is one, or
  ``--task-repo`` (a local path, ``owner/name`` or a GitHub URL). Where ``docker buildx`` works, the harness's
  ``swebench.image_builder.prepare_images`` runs as is; without buildx (Debian's docker.io has none) agentbon
  builds the same image specs (the harness's Dockerfile, build context and name) with the engine's classic
  builder;
- swebench 4.x builds from the suite file (``swebench.harness.prepare_images --dataset_name``);

else ``missing``, with why and the command that gets it. A task without a prebuilt image gets agentbon's own
task image, built on the base image from its environment recipe (``built``, or ``ready`` when cached). ``run``
and ``eval`` check the same before they start (``preflight/images.py``).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentbon.swebench import TASK_REPO_KEY
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


def harness5_build_command(task_repo: str, ids: list[str]) -> list[str]:
    """The harness's own build of the instance images of ``ids`` from a task repository (swebench 5.x)."""
    return [
        sys.executable, "-m", HARNESS5_BUILD, "--task_repo", task_repo, "--instance_ids", *ids,
        "--tag", "latest", "--max_workers", "4",
    ]  # fmt: skip


def buildx_works() -> bool:
    """True where ``docker buildx`` (the builder swebench 5.x calls) answers here."""
    try:
        return subprocess.run(["docker", "buildx", "version"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


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

    def __init__(
        self, client: Any, suite: str | Path, say: Callable[[str], None] | None = None, task_repo: str | None = None
    ):
        self.client, self.suite, self.task_repo = client, Path(suite), task_repo
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
        task_repo = self.task_repo or next((t.metadata[TASK_REPO_KEY] for t in swebench if TASK_REPO_KEY in t.metadata), None)
        if swebench and task_repo and importable(HARNESS5_BUILD):
            return self._harness5(need, ids, task_repo, why)
        if swebench and self.suite.suffix in (".json", ".jsonl"):
            command = harness_build_command(self.suite, [t.task_id for t in swebench])
            if importable(HARNESS_BUILD):
                return self._harness(need, ids, command, why)
            local = harness_image(swebench[0].task_id)
            if importable(HARNESS5_BUILD):
                how = (
                    f"{why}; swebench 5.x builds from a task repository: agentbon sandbox build {self.suite} "
                    f"--task-repo <task repo>, or python -m {HARNESS5_BUILD} --task_repo <task repo> --instance_ids "
                    f"{' '.join(ids)}, then docker tag {local} {need.ref}"
                )
            else:
                how = (
                    f"{why}; build it with the harness (pip install 'swebench>=4,<5'): {' '.join(command[1:])}, "
                    "then run this again; or build it elsewhere and docker load it"
                )
            return Got(need.ref, ids, "missing", how)
        return Got(need.ref, ids, "missing", f"{why}; docker pull {need.ref} where a registry has it, then docker load")

    def _harness5(self, need: Need, ids: list[str], task_repo: str, why: str) -> Got:
        """Build from a task repository: the harness's own build with buildx, else its image specs, classically."""
        if buildx_works():
            return self._harness(need, ids, harness5_build_command(task_repo, ids), why)
        self.say(f"building {need.ref} from the task repository's Dockerfile (no docker buildx: classic builder)")
        try:
            built = build_from_task_repo(self.client, task_repo, ids)
        except Exception as e:  # noqa: BLE001 - the harness's checks, a clone, a Dockerfile step: all say why
            return Got(need.ref, ids, "missing", f"{why}; building it from {task_repo} failed: {_one_line(e)}")
        local = built[0]
        if self._tagged(local, need.ref):
            return Got(need.ref, ids, "built", f"from the harness's image spec in {task_repo} (classic builder)")
        return Got(need.ref, ids, "missing", f"{why}; the build from {task_repo} made {local}, not {need.ref}")

    def _harness(self, need: Need, ids: list[str], command: list[str], why: str) -> Got:
        self.say(f"building {need.ref} with the SWE-bench harness")
        done = subprocess.run(command, capture_output=True, text=True, timeout=HARNESS_TIMEOUT_S)
        if self._tagged(harness_image(need.tasks[0].task_id), need.ref):
            return Got(need.ref, ids, "built", "by the SWE-bench harness")
        tail = (done.stdout + done.stderr).strip().splitlines()[-3:]
        return Got(need.ref, ids, "missing", f"{why}; the harness's build failed (exit {done.returncode}): {' | '.join(tail)}")

    def _tagged(self, local: str, ref: str) -> bool:
        """Whether the engine has ``ref``, once ``local`` (the name a build gave it) is tagged as it where needed."""
        if not self._has(ref) and self._has(local):
            repo, _, tag = ref.rpartition(":")
            self.client.images.get(local).tag(repo, tag)
        return self._has(ref)

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


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    return (" | ".join(lines[-3:]) or type(error).__name__)[:400]


def build_from_task_repo(client: Any, task_repo: str, ids: list[str]) -> list[str]:
    """Build the instance images of ``ids`` the way swebench 5.x specifies them, with the engine's classic builder.

    The harness decides everything but the builder: its checks of the task repository (``guard``), which tasks
    (``select_tasks``), each Dockerfile and build context (``load_dockerfiles``, ``task_paths``) and the image
    name (``get_image_specs_from_dataset``); a GitHub reference is cloned by its ``resolve_task_repo``. Only the
    ``docker buildx build`` call is replaced, by the engine's own build of the same Dockerfile in the same
    context for the same platform. Returns the names built, in the order of ``ids``.
    """
    from swebench.image_builder.image_spec import get_image_specs_from_dataset
    from swebench.image_builder.prepare_images import resolve_task_repo
    from swebench.task.publish import guard
    from swebench.task.repo import load_dockerfiles, select_tasks, task_paths

    with resolve_task_repo(task_repo) as root:
        guard(root)
        dataset = select_tasks(root, ids)
        specs = get_image_specs_from_dataset(dataset, load_dockerfiles(root, ids), None, "latest", task_paths(root, ids))
        names = []
        for spec in specs:
            context = Path(spec.context_dir) if spec.context_dir else Path(root) / "tasks" / spec.instance_id
            with tempfile.TemporaryDirectory() as scratch:  # outside the context: the engine gets it in the tar
                dockerfile = Path(scratch) / "Dockerfile"
                dockerfile.write_text(spec.dockerfile)
                client.images.build(
                    path=str(context), dockerfile=str(dockerfile), tag=spec.name, platform=spec.platform,
                    rm=True, forcerm=True,
                )  # fmt: skip
            names.append(spec.name)
    return names
