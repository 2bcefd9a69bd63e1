"""Docker sandboxes: one labelled, resource-limited container per rollout or verification, from the task image."""

from __future__ import annotations

import atexit
import hashlib
import logging
import os
import secrets
import time
from collections.abc import Callable
from typing import Any

import docker
import requests

from agentbon.config import SandboxConfig
from agentbon.errors import ImageBuildError, SandboxDiskLimit, SandboxGone, SandboxSetupTimeout
from agentbon.sandbox import dfiles
from agentbon.sandbox.admission import Admission, Ticket
from agentbon.sandbox.common import (
    AGENT_DIR_INSIDE,
    CHANNEL_INSIDE,
    GIT_IDENTITY,
    Channel,
    container_labels,
    parse_bytes,
    slug,
)
from agentbon.sandbox.dexec import Executor
from agentbon.sandbox.engine import EngineMeter, MeteredAPI, docker_client, engine_errors, reap_containers
from agentbon.sandbox.harden import PROBE, ROOT, RunAs, as_root_in_repo, host_options, requested, setup_script
from agentbon.sandbox.images import USER_LABEL, TaskImage, task_image
from agentbon.sandbox.patch import stream_patch
from agentbon.sandbox.pool import UNIT_LABELS, WarmPool, pool_key
from agentbon.sandbox.removal import Remover, remove
from agentbon.sandbox.watchdog import DiskWatchdog, quota_refused
from agentbon.types import ExecResult, SandboxUse, Task

log = logging.getLogger(__name__)

SANDBOX_ENV = {**GIT_IDENTITY, "PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb"}


class DockerSandbox:
    """A running container with the task's repository in ``workdir``; see ``protocols.Sandbox``."""

    def __init__(
        self,
        client: docker.DockerClient,
        container_id: str,
        name: str,
        image: TaskImage,
        config: SandboxConfig,
        setup_s: float = 0.0,
        run_as: RunAs | None = None,
        api: Any = None,
        meter: EngineMeter | None = None,
        channel: Channel | None = None,
    ):
        self._client, self._api, self._cid = client, api or client.api, container_id
        self.channel = channel
        """The sandbox's own host folder, mounted at ``/agentbon/channel`` (``sandbox.channel``; None without)."""
        self.agent_dir = AGENT_DIR_INSIDE if config.agent_dir else None
        """Where ``sandbox.agent_dir`` is mounted read-only (None without)."""
        self.meter = meter or EngineMeter()
        """The engine calls made for this sandbox (``api`` counts into it)."""
        self.warm = False
        """Started ahead of need by the warm pool."""
        self.ticket: Ticket | None = None
        """The admission this sandbox's start got (None for a start without admission control)."""
        self.after_close: Callable[[], None] | None = None
        """Run by ``close``: waits for the warm start this sandbox's opening began (pool.py)."""
        self.remover: Remover | None = None
        """Where ``close`` hands the container for removal off the caller's path (None: removed before it returns)."""
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
        self.run_as = run_as or RunAs(0, 0)
        """Who the commands run as (``user=None``); ``run_as.reason`` says why root where root."""
        self.quota = False
        """True when the engine enforces ``disk_limit`` itself; else ``watchdog`` measures the layer."""
        self.watchdog: DiskWatchdog | None = None
        self.stopped_for_disk = ""
        """Why the disk watchdog stopped this sandbox (empty while it has not)."""
        self._executor = Executor(self._api, container_id, config)

    def use(self) -> SandboxUse:
        """What this sandbox cost the engine so far (``Rollout.sandbox``)."""
        return SandboxUse(
            engine_calls=self.meter.total, engine_s=round(self.meter.seconds, 3), warm=self.warm,
            executor=self._executor.mode, admission_wait_s=round(self.ticket.waited_s, 3) if self.ticket else 0.0,
            start_limit=self.ticket.limit if self.ticket else 0,
        )

    def ready(self) -> bool:
        """Still usable: open, and its executor connected and quiet (else, one engine call to ask)."""
        if self.closed or self.stopped_for_disk:
            return False
        if self._executor.ready(self.user):
            return True
        return self._executor.mode.startswith("exec") and self.alive()

    @property
    def isolation(self) -> str:
        """``docker``, or where the commands run as root, why (``Rollout.isolation`` carries it into the run record:
        an ``auto`` user that fell back to root is weaker isolation, docs/security.md)."""
        return f"docker (as root: {self.run_as.reason})" if self.run_as.root and self.run_as.reason else "docker"

    @property
    def user(self) -> str:
        """``uid:gid`` of the commands (``0:0`` where they run as root)."""
        return self.run_as.spec

    def _owner(self, path: str) -> tuple[int, int]:
        """Files under the repository belong to the sandbox's user; everything else written from outside to root."""
        inside = path == self.workdir or path.startswith(self.workdir.rstrip("/") + "/")
        return (self.run_as.uid, self.run_as.gid) if inside else (0, 0)

    # ---------------------------------------------------------------- commands

    def exec(
        self, command: str, timeout: float | None = None, workdir: str | None = None, user: str | None = None
    ) -> ExecResult:
        """Run ``command`` with bash under in-container ``timeout -k``; a failed command is an ``ExecResult``.

        ``user``: None runs it as the sandbox's user (unprivileged where the image allows); ``"root"`` is for the
        verifier's housekeeping, and what it writes in the repository is handed back to the user afterwards.
        """
        if user not in (None, "root"):
            raise ValueError(f"exec(user={user!r}): expected None (the sandbox's user) or 'root'")
        self._check_open()
        limit = self.config.exec_timeout_s if timeout is None else timeout
        cwd = dfiles.absolute(self.workdir, workdir) if workdir else self.workdir
        if user == "root" and not self.run_as.root:
            command = as_root_in_repo(command, self.run_as, self.workdir)
        try:
            with engine_errors("exec"):
                result = self._executor.run(command, limit, cwd, ROOT if user == "root" else self.user)
        except SandboxGone:
            if not self.stopped_for_disk:
                raise
            result = ExecResult(exit_code=137, output="")
        if self.stopped_for_disk:  # stopped while it ran: this command's failure is an observation, the next raises
            result = result.model_copy(
                update={"exit_code": 137, "output": f"{result.output}\n[agentbon: {self.stopped_for_disk}]"}
            )
        return result

    def diff(self) -> str:
        """The working tree against the base commit as a binary-safe git diff, new files included (one exec)."""
        self._check_open()

        def capture(script: str, timeout: float, limit: int) -> tuple[int, bytes]:
            got = self._executor.capture(script, timeout, self.workdir, limit, self.user)
            return got.exit_code, got.data

        with engine_errors("diff"):
            return stream_patch(capture, self.base_commit)

    # ------------------------------------------------------------------- files

    def write_file(self, path: str, content: str | bytes) -> None:
        """Write a file (relative to ``workdir``); parents are created, an existing file keeps its mode."""
        self._check_open()
        with engine_errors("write_file"):
            target = dfiles.absolute(self.workdir, path)
            dfiles.write_file(self._api, self._cid, target, content, self._owner(target))

    def read_file(self, path: str) -> bytes:
        """A file's bytes (relative to ``workdir``); ``FileNotFoundError`` when it is not there."""
        self._check_open()
        with engine_errors("read_file"):
            return dfiles.read_file(self._api, self._cid, dfiles.absolute(self.workdir, path))

    def copy_in(self, host_path: str, dest: str) -> None:
        """Copy a host file or directory to ``dest`` in the sandbox (relative to ``workdir``)."""
        self._check_open()
        with engine_errors("copy_in"):
            target = dfiles.absolute(self.workdir, dest)
            dfiles.copy_in(self._api, self._cid, host_path, target, self._owner(target))

    def copy_out(self, src: str, host_dest: str) -> None:
        """Copy a sandbox file or directory (relative to ``workdir``) to ``host_dest`` on the host."""
        self._check_open()
        with engine_errors("copy_out"):
            dfiles.copy_out(self._api, self._cid, dfiles.absolute(self.workdir, src), host_dest)

    # --------------------------------------------------------------- lifecycle

    def _check_open(self) -> None:
        if self.stopped_for_disk:
            raise SandboxDiskLimit(f"sandbox {self.name}: {self.stopped_for_disk}")
        if self.closed:
            raise SandboxGone(f"sandbox {self.name} was closed")

    def watch_disk(self, limit: int, interval_s: float) -> None:
        """Start the disk watchdog: past ``limit`` bytes in the writable layer, the container is removed."""
        self.watchdog = DiskWatchdog(self._api, self._cid, limit, interval_s, self._stop_for_disk).start()

    def _stop_for_disk(self, size: int) -> None:
        self.stopped_for_disk = (
            f"sandbox stopped: its writable layer reached {size / (1 << 20):.0f} MiB, over sandbox.disk_limit "
            f"{self.config.disk_limit}"
        )
        log.warning("%s: %s", self.name, self.stopped_for_disk)
        self._api.remove_container(self._cid, force=True, v=True)  # frees the layer now, not at close()

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
        if self.watchdog is not None:
            self.watchdog.stop()
        self._executor.close()
        if self.channel is not None:
            self.channel.remove()
        try:
            if self.remover is not None:
                self.meter.add("remove_container", 0.0)  # one engine call, made by the remover's thread
                self.remover.put(self._cid, self.name)
            else:
                remove(self._api, self._cid, self.name)
        finally:
            if self.after_close is not None:
                self.after_close()

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
        self._users: dict[str, RunAs] = {}
        """Per image: the user its sandboxes run as, once a probe (or a fallback to root) decided it."""
        self._baked: dict[str, str] = {}
        """Per image: the ``uid:gid`` it was built for (``agentbon.user`` label; empty for other images)."""
        self.quota: bool | None = None
        """Whether the engine enforces ``storage_opt`` size quotas: None until the first container tells."""
        self.pool = WarmPool(0)
        """Off until ``keep_warm``: only a caller whose runs end with a reap by the run's label may leave warm
        sandboxes waiting (the orchestrator's units)."""
        self._admission: Admission | None = None
        self.remover: Remover | None = None
        """Set by ``keep_warm``: closed sandboxes are removed in the background (removal.py)."""

    def keep_warm(self) -> None:
        """Start sandboxes ahead of need from now on (``sandbox.warm`` per process), and remove closed ones in the
        background; both go at the run's reap at the latest, or when this process exits."""
        if self.remover is None:
            self.remover = Remover(self.client.api)
            atexit.register(self._at_exit)
        self.pool.size = self.config.warm

    def _at_exit(self) -> None:
        self.pool.drain()
        if self.remover is not None:
            self.remover.flush(60.0)

    @property
    def admission(self) -> Admission:
        """The node's start slots for this engine (shared with the node's other processes through file locks)."""
        if self._admission is None:
            engine = slug(os.environ.get("DOCKER_HOST", "local"), 60)
            self._admission = Admission(self.config.max_starting, min(4, self.config.max_starting), name=engine)
        return self._admission

    @property
    def client(self) -> docker.DockerClient:
        """The engine client, connected on first use (so the backend can be shipped to Ray workers)."""
        if self._client is None:
            self._client = docker_client(timeout=max(self.config.setup_timeout_s, 30.0))
        return self._client

    def __getstate__(self) -> dict[str, Any]:
        state = {**self.__dict__, "_client": None, "_admission": None, "remover": None}
        del state["pool"]  # warm sandboxes belong to this process
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, pool=WarmPool(0))

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
        """A container for ``task``, labelled with ``agentbon=1`` and ``agentbon.<key>`` for each label: a warm one
        where the pool has one of this kind (it carries the labels but the unit's own), else one started now; either
        way the next one of this kind starts in the background (docs/sandboxes.md)."""
        labels = dict(labels or {})
        image = self.image_for(task)
        key = pool_key(image.ref, labels)
        started = time.monotonic()
        sandbox = self.pool.take(key)
        if sandbox is not None:
            sandbox.setup_s = time.monotonic() - started
        else:
            sandbox = self._open_now(task, image, labels)
        sandbox.after_close = self._warm_next(key, task, image, labels)
        return sandbox

    def _warm_next(self, key: Any, task: Task, image: TaskImage, labels: dict[str, str]) -> Callable[[], None] | None:
        def start() -> DockerSandbox:
            warm_labels = {k: v for k, v in labels.items() if k not in UNIT_LABELS}
            sandbox = self._open_now(task, image, {**warm_labels, "warm": "1"})
            sandbox.warm = True
            sandbox._executor.connect(sandbox.user)
            return sandbox

        thread = self.pool.fill(key, start)
        if thread is None:
            return None
        timeout = self.config.setup_timeout_s + 30.0
        return lambda: thread.join(timeout)

    def _open_now(self, task: Task, image: TaskImage, labels: dict[str, str]) -> DockerSandbox:
        """Start a container now (under the node's admission control)."""
        tags = container_labels(labels, task.task_id)
        who = tags.get("agentbon.rollout_id") or tags.get("agentbon.task_id", "")
        name = f"agentbon-{slug(tags.get('agentbon.run_id', 'adhoc'), 24)}-{slug(who, 48)}-{secrets.token_hex(3)}"
        started = time.monotonic()
        limit = parse_bytes(self.config.disk_limit) if self.config.disk_limit else None
        meter = EngineMeter()
        api = MeteredAPI(self.client.api, meter)
        channel = Channel.make(CHANNEL_INSIDE) if self.config.channel else None
        try:
            for attempt in (1, 2):
                try:
                    with engine_errors("container start"), self.admission.start() as ticket:
                        container_id, quota = self._start_quota(api, image, name, tags, limit, channel)
                    break
                except docker.errors.ImageNotFound:
                    if attempt == 2:
                        raise
                    self._images.pop(self._memo_key(task), None)  # removed since prepare(): build it again
                    image = self.image_for(task)
        except BaseException:
            if channel is not None:
                channel.remove()
            raise
        sandbox = DockerSandbox(
            self.client, container_id, name, image, self.config, api=api, meter=meter, channel=channel
        )
        sandbox.ticket = ticket
        sandbox.remover = self.remover
        try:
            with engine_errors("sandbox user"):
                sandbox.run_as = self._user_for(sandbox, image)
        except BaseException:
            sandbox.close()
            raise
        sandbox.quota = quota
        if limit is not None and not quota:
            sandbox.watch_disk(limit, self.config.disk_check_s)
        sandbox.setup_s = time.monotonic() - started
        return sandbox

    # ------------------------------------------------------------------ the sandbox's user

    def _image_user(self, ref: str) -> str:
        if ref not in self._baked:
            labels = self.client.api.inspect_image(ref).get("Config", {}).get("Labels") or {}
            self._baked[ref] = labels.get(USER_LABEL, "")
        return self._baked[ref]

    def _user_for(self, sandbox: DockerSandbox, image: TaskImage) -> RunAs:
        """The user this sandbox's commands run as: set it up where the image was not built for it, probe it once
        per image, fall back to root (``auto``) or refuse (an explicit uid) where it cannot work."""
        want = requested(self.config.user)
        known = self._users.get(image.ref)
        if want.root or (known is not None and known.root):
            return known or want
        if self._image_user(image.ref) != want.spec:
            made = sandbox._executor.run(setup_script(want, image.workdir), self.config.setup_timeout_s, "/", ROOT)
            if not made.ok:
                return self._fallback(want, image, f"setting the user up failed: {made.output.strip()[-300:]}")
        if known is None:
            probe = sandbox._executor.run(PROBE, self.config.setup_timeout_s, image.workdir, want.spec)
            if not probe.ok:
                return self._fallback(want, image, probe.output.strip()[-300:] or f"probe exit {probe.exit_code}")
            self._users[image.ref] = want
        return want

    def _fallback(self, want: RunAs, image: TaskImage, why: str) -> RunAs:
        if self.config.user != "auto":
            raise ImageBuildError(f"sandbox.user={self.config.user}: cannot run as {want.spec} in {image.ref}: {why}")
        reason = f"user {want.spec} cannot work in {image.ref} ({why}): commands run as root"
        log.warning("sandbox.user=auto: %s", reason)
        self._users[image.ref] = RunAs(0, 0, reason)
        return self._users[image.ref]

    # ------------------------------------------------------------------ containers

    def _start_quota(
        self, api: Any, image: TaskImage, name: str, tags: dict[str, str], limit: int | None, channel: Channel | None
    ) -> tuple[str, bool]:
        """Start the container, with a size quota where the engine enforces one; return its id and whether it has."""
        if limit is None or self.quota is False:
            return self._start(api, image, name, tags, None, channel), False
        try:
            cid = self._start(api, image, name, tags, limit, channel)
        except docker.errors.APIError as e:
            if not quota_refused(e):
                raise
            log.info("the engine has no per-container disk quota (%s): a watchdog enforces sandbox.disk_limit", e)
            self.quota = False
            return self._start(api, image, name, tags, None, channel), False
        self.quota = True
        return cid, True

    def _binds(self, channel: Channel | None) -> dict[str, dict[str, str]] | None:
        """The host folders mounted in a sandbox: its channel (read-write) and ``sandbox.agent_dir`` (read-only)."""
        binds = {channel.host: {"bind": channel.inside, "mode": "rw"}} if channel else {}
        if self.config.agent_dir:
            binds[self.config.agent_dir] = {"bind": AGENT_DIR_INSIDE, "mode": "ro"}
        return binds or None

    def _start(
        self,
        api: Any,
        image: TaskImage,
        name: str,
        tags: dict[str, str],
        quota: int | None = None,
        channel: Channel | None = None,
    ) -> str:
        """Create and start the container (two engine calls, no inspect); return its id."""
        host_config = api.create_host_config(
            binds=self._binds(channel),
            network_mode=self.config.network,
            nano_cpus=int(self.config.cpus * 1e9) if self.config.cpus else None,  # None: no cap
            mem_limit=self.config.memory,
            memswap_limit=self.config.memory,
            pids_limit=self.config.pids,
            init=True,
            storage_opt={"size": str(quota)} if quota else None,
            **host_options(self.config),
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
                environment={**SANDBOX_ENV, **dict(image.env)},
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
