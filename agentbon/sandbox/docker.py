"""Docker sandboxes: one labelled, resource-limited container per rollout or verification, from the task image."""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from typing import Any

import docker
import requests

from agentbon.config import SandboxConfig
from agentbon.errors import SandboxGone, SandboxSetupTimeout
from agentbon.sandbox import dfiles
from agentbon.sandbox.common import GIT_IDENTITY, container_labels, slug
from agentbon.sandbox.dexec import Executor
from agentbon.sandbox.engine import docker_client, engine_errors, reap_containers
from agentbon.sandbox.images import TaskImage, task_image
from agentbon.sandbox.patch import stream_patch
from agentbon.types import ExecResult, Task

log = logging.getLogger(__name__)

SANDBOX_ENV = {**GIT_IDENTITY, "PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb"}


class DockerSandbox:
    """A running container with the task's repository in ``workdir``; see ``protocols.Sandbox``."""

    isolation = "docker"

    def __init__(
        self,
        client: docker.DockerClient,
        container_id: str,
        name: str,
        image: TaskImage,
        config: SandboxConfig,
        setup_s: float = 0.0,
    ):
        self._client, self._api, self._cid = client, client.api, container_id
        self.id: str = container_id[:12]
        self.name: str = name
        self.image = image.ref
        self.workdir = image.workdir
        self.base_commit = image.base_commit
        self.config = config
        self.setup_s = setup_s
        """Seconds it took to start the container."""
        self.started_at = time.time()
        self.closed = False
        self._executor = Executor(self._api, container_id, config)

    # ---------------------------------------------------------------- commands

    def exec(self, command: str, timeout: float | None = None, workdir: str | None = None) -> ExecResult:
        """Run ``command`` with bash under in-container ``timeout -k``; a failed command is an ``ExecResult``."""
        self._check_open()
        limit = self.config.exec_timeout_s if timeout is None else timeout
        cwd = dfiles.absolute(self.workdir, workdir) if workdir else self.workdir
        with engine_errors("exec"):
            return self._executor.run(command, limit, cwd)

    def diff(self) -> str:
        """The working tree against the base commit as a binary-safe git diff, new files included (one exec)."""
        self._check_open()

        def capture(script: str, timeout: float, limit: int) -> tuple[int, bytes]:
            got = self._executor.capture(script, timeout, self.workdir, limit)
            return got.exit_code, got.data

        with engine_errors("diff"):
            return stream_patch(capture, self.base_commit)

    # ------------------------------------------------------------------- files

    def write_file(self, path: str, content: str | bytes) -> None:
        """Write a file (relative to ``workdir``); parents are created, an existing file keeps its mode."""
        self._check_open()
        with engine_errors("write_file"):
            dfiles.write_file(self._api, self._cid, dfiles.absolute(self.workdir, path), content)

    def read_file(self, path: str) -> bytes:
        """A file's bytes (relative to ``workdir``); ``FileNotFoundError`` when it is not there."""
        self._check_open()
        with engine_errors("read_file"):
            return dfiles.read_file(self._api, self._cid, dfiles.absolute(self.workdir, path))

    def copy_in(self, host_path: str, dest: str) -> None:
        """Copy a host file or directory to ``dest`` in the sandbox (relative to ``workdir``)."""
        self._check_open()
        with engine_errors("copy_in"):
            dfiles.copy_in(self._api, self._cid, host_path, dfiles.absolute(self.workdir, dest))

    def copy_out(self, src: str, host_dest: str) -> None:
        """Copy a sandbox file or directory (relative to ``workdir``) to ``host_dest`` on the host."""
        self._check_open()
        with engine_errors("copy_out"):
            dfiles.copy_out(self._api, self._cid, dfiles.absolute(self.workdir, src), host_dest)

    # --------------------------------------------------------------- lifecycle

    def _check_open(self) -> None:
        if self.closed:
            raise SandboxGone(f"sandbox {self.name} was closed")

    def alive(self) -> bool:
        """True while the container exists and runs."""
        try:
            with engine_errors("inspect"):
                return bool(self._api.inspect_container(self._cid)["State"]["Running"])
        except docker.errors.NotFound:
            return False

    def close(self) -> None:
        """Remove the container; safe to call twice, and when it is already gone."""
        if self.closed:
            return
        self.closed = True
        try:
            with engine_errors("close"):
                self._api.remove_container(self._cid, force=True, v=True)  # no stop first: kill and remove
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError as e:
            if "already in progress" not in str(e):
                log.warning("could not remove sandbox %s: %s (agentbon cleanup removes it)", self.name, e)

    def __enter__(self) -> DockerSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DockerSandbox({self.name}, image={self.image}, workdir={self.workdir})"


class DockerBackend:
    """Sandboxes as Docker containers from per-task images (``protocols.SandboxBackend``)."""

    isolation = "docker"

    def __init__(self, config: SandboxConfig | None = None, client: docker.DockerClient | None = None):
        self.config = config or SandboxConfig()
        self._client = client
        self._images: dict[str, TaskImage] = {}

    @property
    def client(self) -> docker.DockerClient:
        """The engine client, connected on first use (so the backend can be shipped to Ray workers)."""
        if self._client is None:
            self._client = docker_client(timeout=max(self.config.setup_timeout_s, 30.0))
        return self._client

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_client": None}

    @staticmethod
    def _memo_key(task: Task) -> str:
        spec = task.repo.model_dump_json() + task.environment.model_dump_json()
        return f"{task.task_id}:{hashlib.sha256(spec.encode()).hexdigest()[:16]}"

    def image_for(self, task: Task) -> TaskImage:
        """The task's image, built or found once per backend."""
        key = self._memo_key(task)
        if key not in self._images:
            with engine_errors("image build"):
                self._images[key] = task_image(self.client, task)
        return self._images[key]

    def prepare(self, task: Task) -> str:
        """Build (or find in the cache) the task's image; return its reference."""
        return self.image_for(task).ref

    def open(self, task: Task, labels: dict[str, str] | None = None) -> DockerSandbox:
        """Start a container for ``task``, labelled with ``agentbon=1`` and ``agentbon.<key>`` for each label."""
        labels = dict(labels or {})
        image = self.image_for(task)
        tags = container_labels(labels, task.task_id)
        who = tags.get("agentbon.rollout_id") or tags.get("agentbon.task_id", "")
        name = f"agentbon-{slug(tags.get('agentbon.run_id', 'adhoc'), 24)}-{slug(who, 48)}-{secrets.token_hex(3)}"
        started = time.monotonic()
        for attempt in (1, 2):
            try:
                with engine_errors("container start"):
                    container_id = self._start(image, name, tags)
                break
            except docker.errors.ImageNotFound:
                if attempt == 2:
                    raise
                self._images.pop(self._memo_key(task), None)  # removed since prepare(): build it again
                image = self.image_for(task)
        return DockerSandbox(self.client, container_id, name, image, self.config, setup_s=time.monotonic() - started)

    def _start(self, image: TaskImage, name: str, tags: dict[str, str]) -> str:
        """Create and start the container (two engine calls, no inspect); return its id."""
        api = self.client.api
        host_config = api.create_host_config(
            network_mode=self.config.network,
            nano_cpus=int(self.config.cpus * 1e9),
            mem_limit=self.config.memory,
            memswap_limit=self.config.memory,
            pids_limit=self.config.pids,
            init=True,
        )
        try:
            cid = api.create_container(
                image.ref,
                entrypoint=["sleep"],
                command=["infinity"],
                detach=True,
                name=name,
                labels=tags,
                working_dir=image.workdir,
                environment=SANDBOX_ENV,
                hostname="sandbox",
                host_config=host_config,
            )["Id"]
            try:
                api.start(cid)
            except docker.errors.APIError:
                self._discard(cid)
                raise
            return cid
        except requests.Timeout as e:
            self._discard(name)  # it may still come up after we gave up on it
            raise SandboxSetupTimeout(f"sandbox {name} did not start within {self.config.setup_timeout_s}s") from e

    def _discard(self, container: str) -> None:
        try:
            self.client.api.remove_container(container, force=True, v=True)
        except (docker.errors.APIError, requests.RequestException):
            pass  # labelled: the reaper removes it

    def reap(self, labels: dict[str, str] | None = None) -> int:
        """Remove leftover agentbon containers with the labels (all of them when none are given)."""
        return reap_containers(self.client, labels)
