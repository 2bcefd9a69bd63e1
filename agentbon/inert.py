"""Settings that would do nothing: refused, never silently dropped (docs/preflight.md, "Settings that do nothing").

``RULES`` is the table: each row names settings, the mode in which nothing reads them, and that mode in an
operator's words. ``inert`` is the one function that decides: a setting away from its default in a mode that does
not read it is a problem. The config asks at load, with the launcher as given; the preflight asks again once
``auto`` has chosen one (and whether vLLM's server is the GPU build); the engine pool once it knows whether the
cluster has GPUs. A setting left at its default is never a problem, whatever the mode.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentbon.config import RunConfig


@dataclass(frozen=True)
class Mode:
    """What decides whether a setting is read: the config, the launcher that serves the model (``auto`` until it has
    chosen), and whether vLLM runs on GPUs (None until known)."""

    config: RunConfig
    launcher: str
    gpu: bool | None = None
    command: str = "run"
    """``run``, or ``eval`` (grades given patches: no model is served or sampled, agentbon/evaluate)."""

    @property
    def launches(self) -> str | None:
        """The launcher agentbon starts, or None where the endpoints are given (it starts none)."""
        return None if self.config.model.urls() else self.launcher


@dataclass(frozen=True)
class Rule:
    """Settings that nothing reads in a mode."""

    settings: tuple[str, ...]
    applies: Callable[[Mode], bool]
    mode: str
    """The mode, in the words that end ``<setting>=<value> does nothing ...``."""
    off: tuple[Any, ...] = ()
    """Values that ask for nothing (a feature turned off): accepted where the mode does not have the feature either."""


SERVER = (
    "model.launcher", "model.path", "model.threads", "model.ctx", "model.logprobs", "model.serve_host",
    "model.vllm_cpu_threads",
    "model.engines", "model.tensor_parallel_size", "model.gpu_memory_utilization", "model.vllm_python",
)  # fmt: skip
"""What only a model agentbon starts reads."""
DOCKER = (
    "sandbox.cpus", "sandbox.user", "sandbox.drop_capabilities", "sandbox.cap_add", "sandbox.no_new_privileges",
    "sandbox.disk_limit", "sandbox.disk_check_s", "sandbox.warm", "sandbox.max_starting", "sandbox.executor",
)  # fmt: skip
"""What only the Docker backend reads (the process backend honours memory, pids, timeouts and network none)."""
SAMPLING = ("model.temperature", "model.top_p", "model.top_k", "model.max_tokens")
"""What only the agent's model calls read (the judge sends its own)."""
CLIENT = ("model.endpoint", "model.endpoints", "model.api_key", "model.timeout_s", "model.retries")
"""What a client of a served model reads."""
PRICES = (
    "report.usd_per_mtok_prompt", "report.usd_per_mtok_completion", "report.usd_per_mtok_cached",
    "report.usd_per_sandbox_hour",
)  # fmt: skip


def critics(m: Mode) -> bool:
    """Whether a selector of the config reads a critic."""
    from agentbon.select.selectors import SELECTORS

    return any(SELECTORS[name].uses_critic for name in m.config.select.selectors if name in SELECTORS)


def compares(config: RunConfig) -> bool:
    """Whether a selector of the config compares candidates pairwise (a tournament)."""
    from agentbon.select.selectors import SELECTORS

    return any(SELECTORS[name].uses_comparator for name in config.select.selectors if name in SELECTORS)


def judges(config: RunConfig) -> bool:
    """Whether a selector of the config asks a model: the LLM judge or the scale judge as its critic
    (``select.critic=judge`` / ``scale-judge``), or the pairwise judge of a tournament (``select.comparator`` judge,
    or auto); the one model call of an eval."""
    asks_critic = config.select.critic in ("judge", "scale-judge") and critics(Mode(config, config.model.launcher))
    return asks_critic or (config.select.comparator != "critic" and compares(config))


# fmt: off
RULES: tuple[Rule, ...] = (
    Rule(("budget_tokens", "budget_first"), lambda m: m.config.budget is None, "without run.budget (--budget)"),
    Rule(("early_stop_fixed",), lambda m: not m.config.early_stop and m.config.budget is None,
         "with run.early_stop off and no run.budget (no task stops early)"),
    Rule(("early_stop_fixed",), lambda m: m.config.budget is not None and m.config.budget_first is not None,
         "under run.budget with run.budget_first set (the first allotment is the part every task runs)"),
    Rule(("concurrency",), lambda m: bool(m.config.ray_address),
         "on a cluster (run.ray_address): its nodes declare their own sandbox slots"),
    Rule(("ray_niceness",), lambda m: bool(m.config.ray_address),
         "on a cluster (run.ray_address): its Ray is never reniced", off=(0,)),
    Rule(("ray_niceness",), lambda m: m.launches not in ("llama-cpp", "vllm", "auto"),
         "where agentbon starts no model server beside a local Ray (an endpoint given, or engine actors)", off=(0,)),
    Rule((*SERVER, "model.name", *SAMPLING), lambda m: m.command == "eval",
         "with agentbon eval (it grades given patches: no model is served or sampled; the model's name is the "
         "predictions' model_name_or_path, --model)"),
    Rule((*CLIENT, "model.max_inflight"), lambda m: m.command == "eval" and not judges(m.config),
         "with agentbon eval unless a selector asks the judge (select.critic=judge)"),
    Rule(SERVER, lambda m: bool(m.config.model.urls()), "with model.endpoint or model.endpoints given"),
    Rule(("model.max_inflight",), lambda m: bool(m.config.model.endpoint) or m.launches in ("llama-cpp", "vllm"),
         "with one model server (only model.endpoints and vllm-actors spread requests)"),
    Rule(("model.vllm_cpu_threads", "model.engines", "model.tensor_parallel_size", "model.gpu_memory_utilization",
          "model.vllm_python"), lambda m: m.launches == "llama-cpp", "with model.launcher=llama-cpp"),
    Rule(("model.threads", "model.logprobs", "model.engines", "model.vllm_python"), lambda m: m.launches == "vllm",
         "with model.launcher=vllm (model.threads is llama.cpp's; the server's interpreter is $AGENTBON_VLLM_PYTHON "
         "or .venv-vllm)"),
    Rule(("model.threads", "model.logprobs", "model.serve_host", "model.api_key", "model.timeout_s",
          "model.retries"), lambda m: m.launches == "vllm-actors",
         "with model.launcher=vllm-actors (its engines are Ray actors: no server, no HTTP client)"),
    Rule(("model.vllm_cpu_threads",), lambda m: m.gpu is True and m.launches in ("vllm", "vllm-actors"), "on GPUs"),
    Rule(("model.tensor_parallel_size", "model.gpu_memory_utilization"),
         lambda m: m.gpu is False and m.launches == "vllm-actors",
         "with vLLM engines on CPUs (the cluster has no GPU)"),
    Rule(DOCKER, lambda m: m.config.sandbox.backend == "process", "with sandbox.backend=process", off=(None, False, 0)),
    Rule(("sandbox.network",),
         lambda m: m.config.sandbox.backend == "process" and m.config.sandbox.network not in ("none", "host"),
         "with sandbox.backend=process (it runs on the host's network unless sandbox.network=none)"),
    Rule(("sandbox.disk_check_s",), lambda m: m.config.sandbox.disk_limit is None, "without sandbox.disk_limit"),
    Rule(("sandbox.cap_add",), lambda m: not m.config.sandbox.drop_capabilities,
         "with sandbox.drop_capabilities off (every capability is kept)"),
    Rule(("agent.max_context_files", "agent.max_file_lines", "agent.context_lines", "agent.continuations"),
         lambda m: m.config.agent.type != "edit", "with agent.type=bash, mini or command (they are the edit agent's)"),
    Rule(("agent.command_timeout_s",), lambda m: m.config.agent.type in ("edit", "command"),
         "with agent.type=edit or command (it is the bash and mini agents')"),
    Rule(("agent.observation_chars",), lambda m: m.config.agent.type != "bash",
         "with agent.type=edit, mini or command (it is the bash agent's; mini's config renders its own observations)"),
    Rule(("agent.malformed_limit",), lambda m: m.config.agent.type == "command",
         "with agent.type=command (the program reads the model's replies itself)"),
    Rule(("agent.mini_config",), lambda m: m.config.agent.type != "mini", "unless agent.type=mini"),
    Rule(("agent.command", "agent.command_mount"), lambda m: m.config.agent.type != "command",
         "unless agent.type=command"),
    Rule(("verify.flaky_runs", "verify.flaky_passes"), lambda m: m.config.verify.flaky != "rerun",
         "unless verify.flaky=rerun"),
    Rule(("select.critic_path",), lambda m: m.config.select.critic in ("judge", "scale-judge", "none"),
         "with select.critic=judge, scale-judge or none"),
    Rule(("select.scale_criteria", "select.scale_repeats", "select.scale_temperature"),
         lambda m: m.config.select.critic != "scale-judge", "unless select.critic=scale-judge"),
    Rule(("select.comparator", "select.comparisons"), lambda m: not compares(m.config),
         "without a tournament selector (tournament, tests-then-tournament) in select.selectors"),
    Rule(("select.critic", "select.critic_path"), lambda m: not critics(m),
         "without a selector that uses a critic in select.selectors", off=("none",)),
    Rule(("select.soft_temperature",), lambda m: "soft-bon" not in m.config.select.selectors,
         "without soft-bon in select.selectors"),
    Rule(PRICES, lambda m: None in (m.config.report.usd_per_mtok_prompt, m.config.report.usd_per_mtok_completion),
         "without both report.usd_per_mtok_prompt and report.usd_per_mtok_completion (costs are then counted in "
         "tokens)"),
)
# fmt: on
"""Every setting some mode does not read. Settings that depend on the tasks (a runner without pytest plugins) are
not here: the preflight and the verifier report those per task."""


def _value(config: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        config = getattr(config, part)
    return config


def _default(config: Any, dotted: str) -> Any:
    """The field's own default in the config's class (not a default ``RunConfig``'s, whose validation asks this
    module; the class is the config's own, so that this module need not import the config it checks)."""
    model: Any = type(config)
    *sections, name = dotted.split(".")
    for section in sections:
        model = model.model_fields[section].annotation
    return model.model_fields[name].get_default(call_default_factory=True)


def inert(mode: Mode) -> list[str]:
    """``<setting>=<value> does nothing <mode>`` for each setting away from its default that ``mode`` never reads."""
    problems: dict[str, str] = {}
    for rule in RULES:
        if not rule.applies(mode):
            continue
        for setting in rule.settings:
            value = _value(mode.config, setting)
            if setting not in problems and value != _default(mode.config, setting) and value not in rule.off:
                problems[setting] = f"{setting}={value!r} does nothing {rule.mode}"
    return list(problems.values())


def refusal(problems: list[str]) -> str:
    """One message for them all, with the fix."""
    return (
        f"{'; '.join(problems)}. Leave {'them' if len(problems) > 1 else 'it'} unset, or choose the mode that reads it"
    )
