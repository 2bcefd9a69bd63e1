"""What a worker needs from the driver's disk, carried through Ray's object store (docs/architecture.md, "No
shared filesystem").

On a cluster the worker nodes need not see the driver's files. Three things a unit reads from disk are carried
instead, each put into the object store once per run and fetched by a node the first time one of its units needs
it (Ray keeps one copy per node):

- **repositories** given as local paths (a ``repo.bundle`` in a task folder, a clone on the driver's disk): one
  git bundle per distinct source, all its refs (a ``.bundle`` file travels as is; a directory is bundled with
  ``--all``). The worker writes it once into its node's cache and the task's ``repo.url`` points there; the
  sandbox still gets only the history up to the base commit (``sandbox/repo.py``). A remote URL is not carried:
  each node clones it into its own mirror cache. A task with a prebuilt image needs no repository;
- **the verifier scripts** (``verifiers/``): the driver's copy, so that every node grades with the same scripts;
- **the base image recipe** (``sandboxes/base``): a node without the base image builds it from the same recipe,
  under the same content tag;
- **the run's own prompt templates** (``agent.prompts_dir``), under their digest (``agent.prompts_digest``): the
  agent renders the copy of exactly that digest (agent/templates.py), so no node falls back to other prompts.

Files land under ``$AGENTBON_CACHE/shipped`` (``~/.cache/agentbon/shipped``), named by content digest, written
to a temporary name and renamed, under a node-local lock; ``AGENTBON_VERIFIERS``, ``AGENTBON_SANDBOXES`` and
``AGENTBON_PROMPTS`` point the worker process at them. Task images are built on each node on first use, under the
node-local lock of ``sandbox/images.py``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentbon.agent.templates import PROMPTS_ENV
from agentbon.config import AgentConfig, RunConfig
from agentbon.errors import ConfigError, InfraError, TaskError
from agentbon.prompt_files import prompts_digest, read_prompts
from agentbon.types import Task, is_git_url

VERIFIERS_ENV = "AGENTBON_VERIFIERS"
SANDBOXES_ENV = "AGENTBON_SANDBOXES"


class ShipmentLost(InfraError):
    """A carried file could not be fetched from the object store or written on this node."""


@dataclass(frozen=True)
class Parcel:
    """A task as a worker receives it on a cluster: the task and references to what it needs from the driver."""

    task: Task
    files: Any
    """ObjectRef of ``{relative path: (mode, bytes)}``: ``verifiers/...``, ``sandboxes/base/...`` and the run's own
    prompt templates, ``prompts/<digest>/...``."""
    files_digest: str
    repo: Any = None
    """ObjectRef of the git bundle of the task's repository, or None (remote URL, prebuilt image)."""
    repo_digest: str = ""


@dataclass
class Manifest:
    """What a run carries: for the ``shipped`` event."""

    repos: int = 0
    repo_bytes: int = 0
    file_bytes: int = 0
    tasks: int = 0


def shipping(config: RunConfig) -> bool:
    """Carry files through Ray: ``always``; ``auto`` when joining a cluster (``ray_address``), whose other nodes
    need not share this disk; never for a local Ray this run starts (one machine, one disk)."""
    return config.ship == "always" or (config.ship == "auto" and bool(config.ray_address))




def _bundle(source: Path) -> bytes:
    """A git bundle of every ref of ``source``: the file itself for a ``.bundle``, else ``git bundle --all``."""
    import git

    if source.is_file():
        return source.read_bytes()
    with tempfile.TemporaryDirectory(prefix="agentbon-ship-") as tmp:
        out = Path(tmp) / "repo.bundle"
        try:
            git.Repo(source).git.bundle("create", str(out), "--all")
        except (git.GitCommandError, git.InvalidGitRepositoryError, git.NoSuchPathError) as e:
            raise TaskError(str(source), "repo.url", f"cannot bundle it to carry to the cluster: {e}") from e
        return out.read_bytes()


def _tree(root: Path, prefix: str) -> dict[str, tuple[int, bytes]]:
    out = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            out[f"{prefix}/{path.relative_to(root).as_posix()}"] = (path.stat().st_mode & 0o777, path.read_bytes())
    return out


def driver_files(agent: AgentConfig | None = None) -> dict[str, tuple[int, bytes]]:
    """The verifier scripts and the base image recipe as this driver has them, and the run's prompt templates where
    ``agent`` has a folder of its own (``ConfigError`` where it changed since the config was loaded)."""
    from agentbon.sandbox.base import RECIPE_FILES, recipe_dir
    from agentbon.verify import verifiers_dir

    files = _tree(verifiers_dir(), "verifiers")
    recipe = recipe_dir()
    for name in RECIPE_FILES:
        path = recipe / name
        files[f"sandboxes/base/{name}"] = (path.stat().st_mode & 0o777, path.read_bytes())
    if agent is not None and agent.prompts_dir:
        prompts = read_prompts(agent.prompts_dir)
        if prompts_digest(prompts) != agent.prompts_digest:
            raise ConfigError(
                f"agent.prompts_dir: the templates in {agent.prompts_dir} changed since the run's config was loaded "
                "(their digest is part of the run's identity): run the command again"
            )
        for name, text in prompts.items():
            files[f"prompts/{agent.prompts_digest}/{name}"] = (0o644, text.encode())
    return files


def digest(files: dict[str, tuple[int, bytes]]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        mode, data = files[name]
        h.update(f"{name}\0{mode}\0{len(data)}\0".encode() + data)
    return h.hexdigest()[:16]


def pack(tasks: list[Task], agent: AgentConfig | None = None) -> tuple[dict[str, Parcel], Manifest]:
    """Put what the tasks need into the object store (driver side); one parcel per task."""
    import ray

    files = driver_files(agent)
    files_ref, files_digest = ray.put(files), digest(files)
    manifest = Manifest(file_bytes=sum(len(data) for _, data in files.values()), tasks=len(tasks))
    repos: dict[str, tuple[Any, str]] = {}
    parcels = {}
    for task in tasks:
        url = task.repo.url
        if task.environment.image or is_git_url(url):
            parcels[task.task_id] = Parcel(task, files_ref, files_digest)
            continue
        key = str(Path(url).resolve())
        if key not in repos:
            data = _bundle(Path(key))
            repos[key] = (ray.put(data), hashlib.sha256(data).hexdigest()[:16])
            manifest.repos += 1
            manifest.repo_bytes += len(data)
        ref, repo_digest = repos[key]
        parcels[task.task_id] = Parcel(task, files_ref, files_digest, ref, repo_digest)
    return parcels, manifest


def cache_root() -> Path:
    return Path(os.environ.get("AGENTBON_CACHE") or Path.home() / ".cache" / "agentbon") / "shipped"


def _fetch(ref: Any, what: str) -> Any:
    import ray

    try:
        return ray.get(ref, timeout=600)
    except Exception as e:  # noqa: BLE001 - lost object, owner gone, timeout: the infrastructure's doing
        raise ShipmentLost(f"cannot fetch {what} from the driver through Ray: {type(e).__name__}: {e}") from e


def _land(target: Path, write: Any) -> Path:
    """Make ``target`` (a file or folder) with ``write(temporary path)`` once per node: lock, temporary, rename."""
    from agentbon.sandbox.common import file_lock

    if target.exists():
        return target
    with file_lock(f"shipped-{target.name}"):
        if target.exists():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".partial")
        if partial.is_dir():
            shutil.rmtree(partial)
        partial.unlink(missing_ok=True)
        try:
            write(partial)
            partial.rename(target)
        except OSError as e:
            raise ShipmentLost(f"cannot write {target} on this node: {e}") from e
    return target


def _write_tree(files: dict[str, tuple[int, bytes]], root: Path) -> None:
    for name, (mode, data) in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)


def unpack(item: Task | Parcel) -> Task:
    """On the worker: land what the parcel carries in this node's cache and return the task pointing at it.

    A plain ``Task`` (a local Ray, or ``ship=never``) is returned as is."""
    if isinstance(item, Task):
        return item
    folder = cache_root() / "files" / item.files_digest
    if not folder.exists():
        files = _fetch(item.files, "the verifier scripts and the base recipe")
        _land(folder, lambda tmp: _write_tree(files, tmp))
    os.environ[VERIFIERS_ENV] = str(folder / "verifiers")
    os.environ[SANDBOXES_ENV] = str(folder / "sandboxes")
    os.environ[PROMPTS_ENV] = str(folder / "prompts")
    task = item.task
    if item.repo is None:
        return task
    bundle = cache_root() / "repos" / f"{item.repo_digest}.bundle"
    if not bundle.exists():
        data = _fetch(item.repo, f"the repository of {task.task_id}")
        _land(bundle, lambda tmp: tmp.write_bytes(data))
    return task.model_copy(update={"repo": task.repo.model_copy(update={"url": str(bundle)})})
