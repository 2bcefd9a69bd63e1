"""Configuration: one pydantic model per component, YAML files plus repeatable ``-c key.sub=value`` overrides."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PydanticSchemaGenerationError,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agentbon.errors import ConfigError
from agentbon.types import FlagKind, PytestPlugin

MEMORY = re.compile(r"(\d+(?:\.\d+)?)([bkmg]?)b?", re.IGNORECASE)
"""Docker's memory syntax as the SDK parses it: digits (a fraction allowed) with an optional b, k, m or g suffix."""
MIN_MEMORY = 6 << 20
"""The engine refuses a memory limit under 6 MiB."""
NETWORK_MODES = ("none", "bridge", "host")
"""Network modes every Docker engine has; ``container:<name>`` and user-defined networks are the others."""
NETWORK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
"""What Docker accepts as a network or container name."""
USER_ID = re.compile(r"\d{1,10}(:\d{1,10})?")
"""A numeric user, ``<uid>`` or ``<uid>:<gid>``."""
CAPABILITY = re.compile(r"[A-Z][A-Z_]*")
"""A Linux capability's name without ``CAP_`` (``CHOWN``, ``DAC_OVERRIDE``)."""
MIN_DISK = 64 << 20
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""A run id is a directory name under ``run_dir``."""


def memory_bytes(value: str) -> int:
    """``"2g"`` → 2147483648; raises ``ValueError`` naming the syntax for anything else."""
    match = MEMORY.fullmatch(value.strip())
    if not match:
        raise ValueError(
            f"{value!r} is not a docker memory size: digits with an optional b, k, m or g suffix (512m, 2g)"
        )
    scale = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[match.group(2).lower()]
    return int(float(match.group(1)) * scale)


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


M = TypeVar("M", bound=BaseModel)


def read_leniently(model: type[M], data: dict[str, Any]) -> M:
    """``model`` from stored ``data``: unknown keys ignored, missing ones their defaults, and a field that does not
    validate kept as stored, unchecked (a nested section read the same way, so that it stays its model)."""
    known = {k: v for k, v in data.items() if k in model.model_fields}
    try:
        return model.model_validate(known)
    except ValidationError:
        pass
    fields: dict[str, Any] = {}
    for key, field in model.model_fields.items():
        kind = field.annotation
        if key not in known:
            fields[key] = field.get_default(call_default_factory=True)
        elif isinstance(kind, type) and issubclass(kind, BaseModel) and isinstance(known[key], dict):
            fields[key] = read_leniently(kind, known[key])
        else:
            try:
                fields[key] = TypeAdapter(kind).validate_python(known[key])
            except (ValidationError, PydanticSchemaGenerationError):
                fields[key] = known[key]
    return model.model_construct(**fields)


class SandboxConfig(Section):
    backend: Literal["docker", "process"] = "docker"
    """``docker`` (default) or ``process`` (git worktree + subprocess; weaker isolation, reported as such)."""
    network: str = "none"
    """Docker network mode for rollout and verification containers: ``none``, ``bridge``, ``host``,
    ``container:<name>`` or a user-defined network's name (its syntax is checked at load, its existence on the engine
    by the preflight)."""
    cpus: float | None = Field(default=1.0, gt=0)
    """CPU limit per container; ``none``: no limit (``agentbon eval`` of SWE-bench instances, as the harness)."""
    memory: str = "2g"
    """Memory limit per container (docker syntax: digits with an optional b, k, m or g suffix; at least 6m)."""
    pids: int = Field(default=256, ge=1)
    """Process limit per container (contains fork bombs)."""
    exec_timeout_s: float = Field(default=120.0, gt=0)
    """Default timeout of one command, enforced inside the container with ``timeout -k``."""
    output_limit: int = Field(default=20_000, ge=1)
    """Characters of output kept per command (head and tail)."""
    setup_timeout_s: float = Field(default=120.0, gt=0)
    """Deadline for starting a sandbox."""
    user: str = "auto"
    """Who runs the agent's commands and the tests (docs/security.md, "Sandbox hardening"): ``auto`` (an
    unprivileged user, uid:gid 10001:10001, where the image allows it, else root with the reason logged), ``root``,
    or ``<uid>[:<gid>]`` (that user, or the sandbox fails to start). The verifier's housekeeping always runs as
    root. The process backend runs everything as the invoking user."""
    drop_capabilities: bool = True
    """Start containers with every Linux capability dropped except ``cap_add``."""
    cap_add: list[str] = Field(default_factory=lambda: ["CHOWN", "DAC_OVERRIDE", "FOWNER"])
    """Capabilities kept when ``drop_capabilities`` is on: what root housekeeping in a repository owned by the
    sandbox's user needs (measured, docs/security.md). Add e.g. ``SETUID``, ``SETGID`` or ``NET_BIND_SERVICE`` for
    tasks whose tests run as root and need them."""
    no_new_privileges: bool = True
    """``no-new-privileges``: setuid binaries and file capabilities do not raise a process's privileges."""
    disk_limit: str | None = "10g"
    """Most bytes a container may write (its writable layer): docker memory syntax, or None for no limit. An
    engine with quotas (overlay2 on xfs with pquota) enforces it; otherwise a watchdog measures the layer every
    ``disk_check_s`` and stops the sandbox past it (a model outcome, docs/failure-taxonomy.md)."""
    disk_check_s: float = Field(default=2.0, gt=0)
    """Seconds between two measurements of a container's writable layer by the disk watchdog."""
    warm: int = Field(default=1, ge=0)
    """Sandboxes each worker process starts ahead of need (docs/sandboxes.md, "Warm sandboxes"): while a rollout
    runs, the container for the next one of the same task starts; 0 turns it off."""
    max_starting: int = Field(default=8, ge=1)
    """Most sandboxes starting at once on a node; admission control lowers it while the engine is slow or failing
    and raises it back while starts are quick (docs/sandboxes.md, "Admission control")."""
    channel: bool = False
    """Set for the rollouts of ``agent.type=command``, not by hand: each sandbox gets a host folder of its own,
    mounted at ``/agentbon/channel``, where the rollout's model proxy listens on a Unix socket (the sandbox's only way
    out where ``network`` is ``none``; docs/agents.md)."""
    agent_dir: str | None = None
    """Set for the rollouts of ``agent.type=command``, not by hand: ``agent.command_mount``, mounted read-only at
    ``/agentbon/agent``."""
    executor: Literal["resident", "exec"] = "resident"
    """How commands reach a Docker sandbox (docs/sandboxes.md): ``resident``, one small executor process started
    once per sandbox and user that runs every command (no engine call per command; one ``exec`` per command where
    the image has no ``python3``), or ``exec``, one engine ``exec`` per command."""

    @field_validator("cpus", mode="before")
    @classmethod
    def _cpus(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in ("none", "off"):
            return None
        return value

    @field_validator("user")
    @classmethod
    def _user(cls, value: str) -> str:
        value = value.strip()
        if value in ("auto", "root") or USER_ID.fullmatch(value):
            return value
        raise ValueError(f"{value!r} is not a sandbox user: expected auto, root, or <uid>[:<gid>] (e.g. 10001:10001)")

    @field_validator("cap_add")
    @classmethod
    def _caps(cls, value: list[str]) -> list[str]:
        caps = [c.strip().upper().removeprefix("CAP_") for c in value]
        bad = [c for c in caps if not CAPABILITY.fullmatch(c)]
        if bad:
            raise ValueError(f"not capability names: {bad} (expected e.g. CHOWN, DAC_OVERRIDE, SETUID)")
        return caps

    @field_validator("disk_limit", mode="before")
    @classmethod
    def _disk_limit(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            return value
        if value.strip().lower() in ("none", "off", "0"):
            return None
        if memory_bytes(value) < MIN_DISK:
            raise ValueError(f"{value!r} is under the least disk limit of 64m (a sandbox's own files need more)")
        return value.strip().lower()

    @field_validator("memory", mode="before")
    @classmethod
    def _memory(cls, value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # bytes, as ``-c sandbox.memory=1073741824`` reads
        if not isinstance(value, str):
            return value  # pydantic says what type it wants
        if memory_bytes(value) < MIN_MEMORY:
            raise ValueError(f"{value!r} is under Docker's minimum of 6m")
        return value.strip().lower()

    @field_validator("network")
    @classmethod
    def _network(cls, value: str) -> str:
        name = value.removeprefix("container:")
        if not NETWORK_NAME.fullmatch(name):
            raise ValueError(
                f"{value!r} is not a network: expected none, bridge, host, container:<name> or the name of a "
                "user-defined network (letters, digits, '_', '.', '-')"
            )
        return value


def _check_url(value: str) -> None:
    """Raise ``ValueError`` unless ``value`` looks like an http(s) base URL."""
    if not re.match(r"https?://[^/\s]+", value):
        raise ValueError(f"{value!r} is not an http(s) URL such as http://host:8000/v1")


def _same_url(urls: list[str], url: str) -> int:
    """How many of ``urls`` name ``url``, a trailing slash aside (the client strips it)."""
    return sum(1 for u in urls if u.rstrip("/") == url.rstrip("/"))


class ModelConfig(Section):
    endpoint: str | None = None
    """OpenAI-compatible base URL (``http://host:8000/v1``). None: agentbon starts the embedded default server."""
    endpoints: list[str] = Field(default_factory=list)
    """Several OpenAI-compatible base URLs serving the same model, instead of ``endpoint``: each task's rollouts go
    to one of them (its prefix cache) unless that one has ``max_inflight`` requests in flight, then to the
    least-loaded one (docs/models.md, "Several endpoints")."""
    name: str = Field(default="qwen2.5-coder-1.5b-instruct", min_length=1)
    """Model name sent to the endpoint."""
    launcher: Literal["auto", "llama-cpp", "vllm", "vllm-actors"] = "auto"
    """What agentbon starts when no endpoint is given: a llama.cpp or vLLM server, or vLLM engines as Ray actors.
    ``auto``: on a GPU host with vLLM's GPU build (the ``gpu`` extra) and a model for it, engine actors on the GPUs
    (``vllm-actors``: ``engines``, ``tensor_parallel_size``); on a CPU, the server this CPU runs faster, by its
    instruction sets or a cached calibration (``models/choice.py``; docs/models.md, "Which server, and in what
    format"). The run records which one ran."""
    path: str | None = None
    """Weights for a local server: a GGUF file (llama-cpp) or an HF directory / hub id (vllm). None: the default.
    GPU engines on a cluster read a path on their own nodes (docs/models.md)."""
    api_key: str | None = None
    temperature: float = Field(default=0.8, ge=0)
    top_p: float | None = Field(default=None, gt=0, le=1)
    """Nucleus sampling. None: 0.95 for an endpoint you give; not sent where agentbon starts the server and
    ``top_k`` is unset (that server samples with ``top_k`` instead)."""
    top_k: int | None = Field(default=None, ge=1)
    """Sample from the k likeliest tokens. None: 40 where agentbon starts the server and ``top_p`` is unset
    (llama.cpp and vLLM take it); not sent to an endpoint you give (OpenAI's API has no top_k). Top-k rather than
    top-p there because vLLM's CPU build sorts the whole 152k-token vocabulary per token for top-p."""
    max_tokens: int = Field(default=1024, ge=1)
    """Completion tokens per model call."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Per-request timeout. A CPU server with 8 requests in flight can take minutes over one; after two timeouts a
    probe decides: a server that still answers is overloaded (the rollout is retried, the server kept), one that
    does not is restarted."""
    retries: int = Field(default=3, ge=0)
    """Retries on transient errors (connection reset, 429, 503) with backoff; never on a bad reply."""
    seed: int = 0
    """Base seed; rollout i of a task gets a seed derived from this, the task and i."""
    threads: int = Field(default=2, ge=1)
    """CPU threads for a local llama.cpp server."""
    serve_host: str | None = None
    """Where a server agentbon starts listens. None: this machine's loopback on a one-node Ray, and its address on
    the cluster's network (Ray's node IP) when the cluster has more nodes, so that rollouts there reach it. A server
    on any address but the loopback requires an API key (``api_key``, else a random one for the run)."""
    vllm_cpu_threads: int = Field(default=0, ge=0)
    """OpenMP threads of vLLM's CPU build (server or engine actors); refused on GPUs. 0: vLLM's own binding of one
    thread per core on machines with more than 4 cores, one unbound thread on 4 or fewer, where the sandboxes share
    the cores and bound threads stall each other (docs/models.md). N: N unbound threads."""
    ctx: int = Field(default=8192, ge=1)
    """Context length for a local server; the edit agent fits its first prompt in it (less ``max_tokens`` and the
    reply's continuations), with any model."""
    logprobs: bool = False
    """A local llama.cpp server answers logprobs requests: it then keeps the logits of every position (ctx x
    vocabulary x 4 bytes, 4.6 GiB for the embedded model at 8192). A run whose selectors ask the LLM judge
    (``select.critic: judge``) turns it on for the server it starts; ``agentbon model serve`` serving a judge for
    other runs needs it set. vLLM always answers logprobs."""
    engines: int = Field(default=0, ge=0)
    """``vllm-actors``: vLLM engine actors; each task's rollouts stay on one (its prefix cache). 0: on GPUs, as many
    as the cluster's nodes hold (each node's GPUs // ``tensor_parallel_size``); on CPU, one. The driver sets the
    number it started."""
    tensor_parallel_size: int = Field(default=1, ge=1)
    """``vllm-actors`` on GPUs: GPUs per engine (tensor parallelism), all on one node (a placement group each); the
    ``vllm`` server's ``--tensor-parallel-size``."""
    gpu_memory_utilization: float = Field(default=0.9, gt=0, le=1)
    """``vllm-actors`` on GPUs and the ``vllm`` server: the share of each GPU's memory an engine may take (weights,
    activations, KV cache)."""
    max_inflight: int = Field(default=64, ge=1)
    """``vllm-actors`` and ``endpoints``: requests one engine or endpoint holds at once before a task's requests
    spill to another one."""
    vllm_python: str | None = None
    """``vllm-actors``: interpreter of the engine actors (a venv with vllm, ray and agentbon). None: on CPU the venv of
    ``scripts/setup_vllm_cpu.sh`` where it exists, else the workers' own interpreter; on GPUs the GPU nodes' own (a
    path given here must exist on every GPU node: docs/models.md)."""
    pool: str | None = None
    """Set by the driver, not by hand: the name of the Ray engine pool (``vllm-actors``) or of the router of
    ``endpoints`` serving this run."""

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str | None) -> str | None:
        if value is not None:
            _check_url(value)
        return value

    @field_validator("endpoints")
    @classmethod
    def _endpoints(cls, value: list[str], info: ValidationInfo) -> list[str]:
        """Each an http(s) URL, none twice, and not together with ``endpoint`` (which one would be meant?)."""
        if value and info.data.get("endpoint"):
            raise ValueError(
                "set either model.endpoint (one URL) or model.endpoints (several), not both; "
                f"got endpoint {info.data['endpoint']!r} and endpoints {value!r}"
            )
        for url in value:
            _check_url(url)
        twice = sorted({url.rstrip("/") for url in value if _same_url(value, url) > 1})
        if twice:
            raise ValueError(f"{', '.join(twice)} given more than once (each endpoint once)")
        return value

    def urls(self) -> list[str]:
        """The endpoints given: ``endpoints``, else ``[endpoint]``, else none (agentbon serves the model)."""
        return list(self.endpoints) or ([self.endpoint] if self.endpoint else [])

    def sampling(self) -> dict[str, Any]:
        """What every model call sends: temperature, max_tokens, and top_p and top_k where set."""
        out: dict[str, Any] = {"temperature": self.temperature, "max_tokens": self.max_tokens}
        for key in ("top_p", "top_k"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


MINI_CONFIGS = {"default": "default.yaml", "swebench": "benchmarks/swebench_backticks.yaml"}
"""``agent.mini_config`` names and the files of mini-swe-agent's package they stand for. Its SWE-bench config is
the text form (one fenced command per reply): agentbon's model client speaks chat text, not tool calls."""


class AgentConfig(Section):
    type: Literal["bash", "edit", "mini", "command"] = "edit"
    """``bash`` (multi-turn shell actions, mini-swe-agent style), ``edit`` (one-shot search/replace edits), ``mini``
    (mini-swe-agent's own loop and config files, the ``mini`` extra) or ``command`` (a program of the user's own, run in
    the sandbox with the model behind a proxy of the rollout's; docs/agents.md)."""
    step_limit: int = Field(default=20, ge=1)
    """Model calls per rollout."""
    token_limit: int = Field(default=60_000, ge=1)
    """Total prompt + completion tokens per rollout."""
    time_limit_s: float = Field(default=900.0, gt=0)
    """Wall-clock limit of one rollout's agent loop."""
    malformed_limit: int | None = Field(default=None, ge=1)
    """Replies the agent cannot act on before the rollout ends with ``format_error``. None: 3 for the bash agent
    and the mini agent (which counts them in a row, as mini-swe-agent does); 2 for the edit agent (its first reply
    and one repair: on the demo suite with the 1.5B model a second reply applied 3 times in 41 and a third 0 in 38,
    while those repairs were half of all model calls)."""
    max_context_files: int = Field(default=6, ge=1)
    """Edit agent: how many repository files are shown."""
    continuations: int = Field(default=2, ge=0)
    """Edit agent: a reply cut at ``model.max_tokens`` is continued up to this many times (each a model call, counted
    against the limits) and the pieces read as one reply; 0 reads a cut reply as it is."""
    show_hints: bool = False
    command_timeout_s: float = Field(default=60.0, gt=0)
    """Bash agent: timeout of one command; a command that runs past it is reported to the model, not fatal."""
    observation_chars: int = Field(default=8_000, ge=1)
    """Bash agent: characters of a command's output shown to the model (head and tail)."""
    max_file_lines: int = Field(default=200, ge=1)
    """Edit agent: lines shown of one file (the window with most matches where the file is longer)."""
    context_lines: int = Field(default=400, ge=1)
    """Edit agent: lines of file contents shown in all (files in rank order until spent); fits an 8k context."""
    mini_config: str = "default"
    """Mini agent: mini-swe-agent's config file: ``default`` (its default config), ``swebench`` (its SWE-bench config
    in text form) or the path of a YAML file in its format (read where the rollout runs; docs/agents.md)."""
    command: str | None = None
    """Command agent: the command line of the program, run by bash in the repository inside the sandbox (required
    with ``type=command``; docs/agents.md, "Bring your own agent")."""
    command_mount: str | None = None
    """Command agent: a host folder mounted read-only in the sandbox at ``/agentbon/agent`` (its path there is
    ``$AGENTBON_AGENT_DIR``): the program and what it needs, where the task image lacks them. Made absolute at load."""
    prompts_dir: str | None = None
    """A directory of ``.j2`` templates that replace the built-in prompts of the same name (at least one of the
    chosen agent's). Read at load, and carried to the workers with the run (agent/templates.py)."""
    prompts_digest: str | None = None
    """Set at load, not by hand: the digest of ``prompts_dir``'s files. A run's identity holds it (a resume with
    other templates is refused), and each worker checks the templates it renders against it."""

    @field_validator("prompts_dir")
    @classmethod
    def _prompts_dir(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A folder that is missing, or that replaces none of this agent's prompts, is refused now."""
        if value is None:
            return None
        from agentbon.prompt_files import check_prompts

        folder = str(Path(value).expanduser().resolve())
        check_prompts(folder, info.data.get("type", "edit"))
        return folder

    @field_validator("mini_config")
    @classmethod
    def _mini_config(cls, value: str) -> str:
        """A named config is kept as named; a path must name a file, and is made absolute."""
        if value in MINI_CONFIGS:
            return value
        path = Path(value).expanduser().resolve()
        if not path.is_file():
            raise ValueError(f"not one of {', '.join(MINI_CONFIGS)} and no such file: {value}")
        return str(path)

    @field_validator("command_mount")
    @classmethod
    def _command_mount(cls, value: str | None) -> str | None:
        """A folder that is missing is refused now; a path is made absolute."""
        if value is None:
            return None
        path = Path(value).expanduser().resolve()
        if not path.is_dir():
            raise ValueError(f"no such folder: {value}")
        return str(path)

    @model_validator(mode="after")
    def _command_given(self) -> AgentConfig:
        if self.type == "command" and not (self.command or "").strip():
            raise ValueError("agent.type=command needs agent.command (the program's command line)")
        return self

    @model_validator(mode="after")
    def _prompts_digest(self) -> AgentConfig:
        from agentbon.prompt_files import prompts_digest, read_prompts

        self.prompts_digest = prompts_digest(read_prompts(self.prompts_dir)) if self.prompts_dir else None
        return self

    def malformed_cap(self) -> int:
        """``malformed_limit``, or the default of this agent type."""
        if self.malformed_limit is not None:
            return self.malformed_limit
        return 2 if self.type == "edit" else 3


class VerifyConfig(Section):
    timeout_s: float = Field(default=300.0, gt=0)
    """Test-run timeout inside the verification container."""
    dedupe: bool = True
    """Verify identical (normalised) patches once in a run and share the verdict (the driver's ``VerdictCache``)."""
    concurrency: int = Field(default=2, ge=1)
    """Verification containers at once."""
    pytest_plugins: list[PytestPlugin] = Field(default_factory=list)
    """pytest plugins loaded with ``-p`` in every task's test runs, besides each test set's own ``pytest_plugins``
    (autoload stays off; see ``TestSet.pytest_plugins``). E.g. ``[pytest_django.plugin, asyncio]``."""
    pytest_plugin_autoload: bool | None = None
    """None: each test set decides (``TestSet.pytest_plugin_autoload``, off by default); True or False: for every
    task. On, pytest loads every installed plugin, and a candidate that edits a plugin of the repository under
    test can forge results from inside pytest; off, only the named plugins load."""
    max_file_bytes: int = Field(default=1 << 20, ge=1)
    """A file the patch adds, or grows by, more than this many bytes is flagged ``large_file`` (docs/security.md,
    "Static scan")."""
    flaky: Literal["rerun", "exclude", "strict"] = "rerun"
    """Tests the suite's flaky map names (``agentbon tasks validate`` writes it): ``rerun`` decides each k of m
    (``flaky_passes`` of ``flaky_runs``), ``exclude`` leaves them out of the grade (keeping FAIL_TO_PASS ones where
    none would be left), ``strict`` grades them on one run like any test (verify/flaky.py)."""
    flaky_runs: int = Field(default=3, ge=1)
    """m: the most runs a flaky test gets in one verification (the first included)."""
    flaky_passes: int = Field(default=2, ge=1)
    """k: the passes a flaky test needs out of ``flaky_runs`` to count as passed."""
    fail_to_pass_first: bool = False
    """Run a test set's FAIL_TO_PASS tests alone first and stop there when one of them fails (the verdict is then
    ``fail`` whatever the PASS_TO_PASS tests do, and those are recorded in ``Verdict.not_run``); a candidate that
    passes them runs the PASS_TO_PASS tests next, in a second runner call. Saves the PASS_TO_PASS run of every
    candidate that fails a FAIL_TO_PASS test, at one more runner start for each that passes: the report's frontier
    ("FAIL_TO_PASS first") shows on a run's own records whether it pays. Needs agentbon's runner (``pytest``,
    ``unittest``); a harness eval script or a ``command`` runs whole. Leave it off for suites whose tests depend on
    running in one process in order."""

    @model_validator(mode="after")
    def _k_of_m(self) -> VerifyConfig:
        if self.flaky_passes > self.flaky_runs:
            raise ValueError(
                f"verify.flaky_passes ({self.flaky_passes}) is more than verify.flaky_runs ({self.flaky_runs}): "
                "no flaky test could pass"
            )
        return self


class SelectConfig(Section):
    selectors: list[str] = Field(
        min_length=1,
        default_factory=lambda: [
            "tests-then-critic", "critic-then-tests", "tests", "critic", "majority", "soft-bon", "random", "oracle"
        ],  # fmt: skip
    )
    """Selectors reported; the first is the one whose winner is exported."""
    critic: Literal["auto", "classifier", "judge", "scale-judge", "none"] = "auto"
    """``auto``: a classifier trained on the run directory's earlier runs where it beats the evidence result out of
    fold, else the heuristic prior (critic/auto.py); ``classifier``: ``critic_path``'s, else the prior; ``judge``:
    the served model asked YES/NO; ``scale-judge``: the served model's expected rating on a 1-9 scale from its
    logprobs (critic/scale.py); ``none``."""
    scale_criteria: list[str] = Field(default_factory=list)
    """``scale-judge``: the criteria it rates, one question each (empty: whether the patch resolves the issue)."""
    scale_repeats: int = Field(default=1, ge=1, le=16)
    """``scale-judge``: answers per criterion, averaged (seeds 0, 1, ...; worth more than 1 only with
    ``scale_temperature`` above 0)."""
    scale_temperature: float = Field(default=0.0, ge=0)
    """``scale-judge``: the sampling temperature of its answers."""
    comparator: Literal["auto", "judge", "critic"] = "auto"
    """What the tournament selectors (``tournament``, ``tests-then-tournament``) compare with: ``judge``, the served
    model shown both candidates and asked in both orders (critic/pairwise.py); ``critic``, the configured pointwise
    critic read pairwise (no model); ``auto``: the judge where the run has a model to ask (``agentbon run``, or
    ``agentbon eval`` with an endpoint), else the critic."""
    comparisons: int | None = Field(default=None, ge=1)
    """Most pairwise comparisons per task (each asked in both orders); None: every pair the tournament needs. Below
    that, the pairs most likely to decide the winner go first (docs/estimators.md, "tournament")."""
    critic_path: str | None = None
    """A trained classifier (``agentbon critic train``), used as it is by ``auto`` and ``classifier``."""
    soft_temperature: float = Field(default=0.5, gt=0)
    """Temperature of ``soft-bon``'s softmax over critic scores."""
    allow_flags: list[FlagKind] = Field(default_factory=list)
    """Flag kinds that do not keep a candidate from being chosen. A candidate whose evidence verdict carries any
    other flag ranks with the invalid ones, below every candidate a selector may pick (docs/security.md, Flags)."""
    flagged_fallback: Literal["none", "flagged"] = "none"
    """A task whose valid candidates are all flagged: ``none`` gets no winner (the reason names the flags);
    ``flagged`` lets the selector choose among them as usual (the exports mark the winner)."""


class ReportConfig(Section):
    bootstrap: int = Field(default=1000, ge=1)
    """Bootstrap resamples over tasks for confidence intervals."""
    confidence: float = Field(default=0.95, gt=0, lt=1)
    """Width of the confidence intervals."""
    seed: int = 0
    """Seed of the bootstrap (reports re-render identically)."""
    targets: list[Annotated[float, Field(gt=0, le=1)]] = Field(default_factory=list)
    """Accuracies (0..1) for which the scaling table extrapolates the k needed; besides +5 and +10 points."""
    usd_per_mtok_prompt: float | None = Field(default=None, ge=0)
    """Price of a million uncached prompt tokens; with the other prices, costs are shown in USD, else in tokens."""
    usd_per_mtok_cached: float | None = Field(default=None, ge=0)
    """Price of a million cached prompt tokens (defaults to the prompt price)."""
    usd_per_mtok_completion: float | None = Field(default=None, ge=0)
    usd_per_sandbox_hour: float = Field(default=0.0, ge=0)
    """Price of one sandbox (container) hour, charged on rollout and verification time."""
    rl_training_cost: float | None = Field(default=None, ge=0)
    """Cost of an RL run reaching the same accuracy at N = 1, in the report's cost unit (USD or tokens)."""
    soft_bon: Literal["auto", "exact", "estimate"] = "auto"
    """``soft-bon``'s selected@k: ``exact`` (minutes at 10,000 tasks x N = 256), ``estimate`` (unbiased, its Monte
    Carlo error shown), ``auto``: exact unless that costs more than about half a second (docs/estimators.md)."""
    majority: Literal["auto", "exact", "estimate"] = "auto"
    """``majority``'s selected@k (a vote inside each k-subset), as ``soft_bon``: ``exact`` (slow where many patches
    repeat at large N), ``estimate`` or ``auto`` (docs/estimators.md)."""


class ExportConfig(Section):
    flagged: Literal["mark", "omit"] = "mark"
    """Flagged candidates in exports: ``mark`` ships them with their flags and the files grading undid; ``omit``
    leaves out every candidate with a flag ``select.allow_flags`` does not accept (docs/security.md, Flags)."""


SERIAL_SLOTS = 2
"""Sandbox slots of a local Ray where agentbon starts llama.cpp's server, which answers one request at a time."""
BATCHED_SLOTS = 16
"""Sandbox slots of a local Ray where the server batches requests (vLLM, or an endpoint given)."""


class RunConfig(Section):
    n: int = Field(default=4, ge=1)
    """Rollouts per task."""
    run_dir: str = Field(default="runs", min_length=1)
    """Where run directories live."""
    run_id: str | None = Field(default=None, max_length=200)
    """The run's directory name under ``run_dir``. None: derived from the suite's task ids, the model and the settings
    a resume must keep (orchestrate/resume.py)."""
    concurrency: int | None = Field(default=None, ge=1)
    """Sandbox slots (rollouts at once) of a local Ray. None: picked by how the model serves requests
    (``SERIAL_SLOTS`` for llama.cpp's server, else ``BATCHED_SLOTS``: ``orchestrate.cluster.sandbox_slots``)."""
    max_pending: int = Field(default=64, ge=1)
    """Bound on submitted, unfinished rollouts."""
    infra_retries: int = Field(default=2, ge=0)
    """Retries of a rollout that failed on infrastructure."""
    infra_backoff_s: float = Field(default=2.0, ge=0)
    """Wait before the first infra retry of a unit, doubled for each later one (at most 60 s): an engine or server
    that is restarting gets time to come back instead of failing every retry at once."""
    infra_abort_after: int = Field(default=16, ge=0)
    """Stop the run (resumable, exit code 3) after this many units in a row ended in infra errors with their retries
    spent and nothing finished in between: a server or engine that stays down does not burn the whole batch. 0:
    never."""
    deadline_s: float = Field(default=1800.0, gt=0)
    """Hard deadline for one rollout over its whole life: at least ``sandbox.setup_timeout_s + agent.time_limit_s +
    model.timeout_s``, so that an agent that uses its time limit ends as ``time_limit`` (the model's outcome) rather
    than being killed as infrastructure. Verification has a budget of its own (verify/budget.py)."""
    early_stop: bool = True
    """Cancel a migration task's pending rollouts once one passes (evidence == grade)."""
    early_stop_fixed: int = Field(default=4, ge=1)
    """Rollouts ``0..early_stop_fixed-1`` of every task run to the end even after a pass: the part of the sample
    fixed in advance, from which the curves of an early-stopped task are computed (an unbiased estimate; the
    rollouts early stop let through besides are used for selection only). See docs/estimators.md."""
    budget: int | None = Field(default=None, ge=1)
    """Rollouts for the whole batch (None: ``n`` for every task). Each task gets ``budget_first`` first; the rest
    goes, one rollout at a time, to the tasks without a verified pass whose next rollout is likeliest to give one,
    up to ``n`` per task (orchestrate/budget.py, docs/estimators.md "A batch budget")."""
    budget_tokens: int | None = Field(default=None, ge=1)
    """Tokens (prompt and completion) for the whole batch besides ``budget``: nothing more is given out once the
    tokens spent, plus the mean per rollout for each one in flight, reach it."""
    budget_first: int | None = Field(default=None, ge=1)
    """Each task's first allotment under a budget, run whatever the outcomes: the part of the sample the curves use.
    None: ``early_stop_fixed``."""
    accept_task_changes: bool = False
    """Resume a run although some of its tasks were redefined since it started (base commit, tests, problem): their
    stored rollouts are then mixed with rollouts of the new definitions. Off: such a resume stops with an error."""
    ray_address: str | None = None
    ship: Literal["auto", "always", "never"] = "auto"
    """Carry the task repositories given as local paths, the verifier scripts and the base image recipe to the
    workers through Ray's object store (``orchestrate/shipping.py``), so that no node needs the driver's disk.
    ``auto``: when joining a cluster (``ray_address``); a local Ray this run starts shares this machine's disk."""
    ray_niceness: int = Field(default=10, ge=0, le=19)
    """Niceness of a local Ray's processes (raylet, and the workers it starts: rollouts, verifiers) where agentbon
    also starts the model server on this machine (launcher ``llama-cpp`` or ``vllm``), so that the server gets the
    CPU first: its threads wait on each other, and any other work that preempts one stalls them all. 0: leave
    them. Ray of a cluster (``ray_address``) and engine actors (``vllm-actors``) are never reniced."""
    sandbox: SandboxConfig = Field(default_factory=SandboxConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    select: SelectConfig = Field(default_factory=SelectConfig)
    report: ReportConfig = Field(default_factory=ReportConfig)
    export: ExportConfig = Field(default_factory=ExportConfig)

    @field_validator("ray_address")
    @classmethod
    def _ray_address(cls, value: str | None) -> str | None:
        if value and value.startswith("ray://"):
            raise ValueError(
                f"{value!r} is a Ray Client address, which agentbon does not drive runs through: run agentbon on a "
                "machine of the cluster (the head, or any node started with `ray start --address`) with "
                "--ray-address <head-ip>:6379 (the cluster's GCS address); nothing has to be copied to the other "
                "nodes (docs/architecture.md, 'No shared filesystem')"
            )
        return value

    @model_validator(mode="after")
    def _rollout_fits_its_deadline(self) -> RunConfig:
        """The deadline holds the sandbox's start, the agent's time limit and one model call begun just before it
        (the agent checks its limit between calls; a shell command is cut to the time left)."""
        parts = {
            "sandbox.setup_timeout_s": self.sandbox.setup_timeout_s, "agent.time_limit_s": self.agent.time_limit_s,
            "model.timeout_s": self.model.timeout_s,
        }  # fmt: skip
        need = sum(parts.values())
        if need > self.deadline_s:
            named = " + ".join(f"{key} ({value:g})" for key, value in parts.items())
            raise ValueError(
                f"deadline_s ({self.deadline_s:g}) is less than {named} = {need:g}: a rollout whose agent uses its "
                "time limit would be killed at the deadline as an infrastructure failure, retried and run again on "
                f"every resume; raise deadline_s to {need:g} or more, or lower the others"
            )
        return self

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, value: str | None) -> str | None:
        if value is not None and not RUN_ID.fullmatch(value):
            raise ValueError(
                f"{value!r} is not a directory name (letters, digits, '.', '_', '-'; not starting with '.')"
            )
        return value

    @model_validator(mode="after")
    def _nothing_inert(self) -> RunConfig:
        """Refuse settings the run's mode never reads (agentbon/inert.py), with the launcher as given."""
        from agentbon.inert import Mode, inert, refusal

        problems = inert(Mode(self, self.model.launcher))
        if problems:
            raise ValueError(refusal(problems))
        return self

    @classmethod
    def read(cls, data: dict[str, Any]) -> RunConfig:
        """A run's stored settings, read leniently for runs written by other versions: keys this version does not know
        are ignored and a missing key takes its default; settings that no longer validate (a check a newer version
        added) are taken as stored, unchecked, since the run already ran with them. Each section is still its model
        (``read_leniently``), so a reader's typed access holds for an older run too."""
        return read_leniently(cls, data)

    def rollout_sandbox(self) -> SandboxConfig:
        """The sandbox settings of a rollout: ``sandbox``, with a channel to the model proxy and the program's folder
        mounted for ``agent.type=command`` (verification sandboxes get neither)."""
        if self.agent.type != "command":
            return self.sandbox
        return self.sandbox.model_copy(update={"channel": True, "agent_dir": self.agent.command_mount})

    def fixed_part(self) -> int:
        """Rollouts ``0..fixed_part()-1`` of every task run whatever the outcomes (the curves' sample): the budget's
        first allotment under a budget, else ``early_stop_fixed``."""
        return min(self.budget_first or self.early_stop_fixed, self.n) if self.budget else self.early_stop_fixed


def _parse_value(raw: str) -> Any:
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw


def merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    """Recursive dict merge: ``update`` wins, nested dicts are merged."""
    out = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def override(key: str, raw: str) -> dict[str, Any]:
    """``model.temperature``, ``"0.2"`` → ``{"model": {"temperature": 0.2}}``."""
    parts = key.split(".")
    if not all(parts):
        raise ConfigError(f"-c {key}={raw}: empty key segment")
    tree: dict[str, Any] = {parts[-1]: _parse_value(raw)}
    for part in reversed(parts[:-1]):
        tree = {part: tree}
    return tree


RANGE_ERRORS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")


def _bounds(loc: tuple[Any, ...]) -> str | None:
    """The range a numeric field allows (``> 0 and < 1``), from its constraints; None where it has none."""
    model: Any = RunConfig
    field = None
    for part in loc:
        if not isinstance(part, str) or model is None or part not in model.model_fields:
            break  # a list index: the item's constraints are not reachable this way
        field = model.model_fields[part]
        model = (
            field.annotation if isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel) else None
        )
    if field is None:
        return None
    ops = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
    bounds = [f"{ops[op]} {getattr(m, op)}" for m in field.metadata for op in ops if getattr(m, op, None) is not None]
    return " and ".join(bounds) or None


def _problem(err: Any) -> str:
    """``key.sub: what is wrong, the allowed range (got value)`` for one pydantic error."""
    key = ".".join(str(p) for p in err["loc"])
    if err["type"] == "value_error":
        message = str(err["msg"]).removeprefix("Value error, ")
        return f"{key}: {message}" if key else message  # a check across sections names its settings itself
    if err["type"] in ("missing", "extra_forbidden") or isinstance(err.get("input"), dict | list):
        return f"{key}: {err['msg']}"
    bounds = _bounds(tuple(err["loc"])) if err["type"] in RANGE_ERRORS else None
    message = f"must be {bounds}" if bounds else str(err["msg"])
    return f"{key}: {message} (got {err.get('input')!r})"


def load_config(files: list[Path] | None = None, overrides: list[str] | None = None, **direct: Any) -> RunConfig:
    """Merge YAML files, then ``key.sub=value`` overrides, then keyword values; validate once."""
    data: dict[str, Any] = {}
    for path in files or []:
        try:
            loaded = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as e:
            raise ConfigError(f"{path}: cannot read config: {e}") from e
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: top level must be a mapping")
        data = merge(data, loaded)
    for item in overrides or []:
        if "=" not in item:
            raise ConfigError(f"-c {item}: expected key.sub=value")
        key, raw = item.split("=", 1)
        data = merge(data, override(key.strip(), raw))
    data = merge(data, {k: v for k, v in direct.items() if v is not None})
    try:
        return RunConfig.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(_problem(err) for err in e.errors())
        raise ConfigError(f"invalid config: {problems}") from e
