"""What this machine's CPU offers the model servers: its instruction sets, read from ``/proc/cpuinfo``, and the
vLLM weight format each set runs well (docs/models.md, "Which server, and in what format").

Pure functions over the text of ``/proc/cpuinfo`` so that tests give any CPU; ``this_cpu()`` reads the real one.
"""

from __future__ import annotations

import functools
import os
import platform
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

CPUINFO = Path("/proc/cpuinfo")
SHARED_CORES = 4
"""Machines with this many cores or fewer share them between the model server and the sandboxes and verifiers."""

VNNI = frozenset({"avx512_vnni", "amx_int8"})
"""Flags of the int8 dot-product instructions oneDNN's int8 GEMM needs. Without them (AVX2 only) it recomputes
the weights' compensation on every call: on a 2-core AVX2 EPYC that loop was 47 % of the engine's time, and the
int8 model decoded 0.4-0.6 tokens/s where llama.cpp did 11.5."""
BF16 = frozenset({"avx512_bf16", "amx_bf16"})
"""Flags of native bf16 arithmetic. Without them torch emulates bf16 matrix products (3x slower than fp32 at 16
rows on the same AVX2 core)."""


class Cpu(BaseModel):
    """The facts about a CPU that decide a model server and its weight format."""

    model_config = ConfigDict(frozen=True)

    name: str
    """``model name`` from ``/proc/cpuinfo`` (e.g. ``AMD EPYC``), or the platform's processor string."""
    arch: str
    """``x86_64``, ``aarch64``, ..."""
    cores: int
    """Logical CPUs this process may use."""
    flags: frozenset[str]

    @property
    def isa(self) -> str:
        """The widest instruction set that matters to the servers: ``avx512-vnni-bf16``, ``avx512-vnni``,
        ``avx512``, ``avx2``, or ``baseline``."""
        if "avx512f" in self.flags:
            extras = ["vnni"] * bool(VNNI & self.flags) + ["bf16"] * bool(BF16 & self.flags)
            return "-".join(["avx512", *extras])
        return "avx2" if "avx2" in self.flags else "baseline"

    def describe(self) -> str:
        """One line for messages: ``AMD EPYC, 2 cores, avx2 (no AVX-512)``."""
        note = "" if "avx512f" in self.flags or self.arch not in ("x86_64", "amd64") else " (no AVX-512)"
        return f"{self.name}, {self.cores} cores, {self.isa}{note}"


def parse_cpuinfo(text: str, *, cores: int, arch: str = "x86_64") -> Cpu:
    """The ``Cpu`` that the text of ``/proc/cpuinfo`` describes (its first processor's name and flags)."""
    name, flags = "", ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "model name" and not name:
            name = value.strip()
        elif key in ("flags", "features") and not flags:  # x86 / arm
            flags = value
        if name and flags:
            break
    return Cpu(name=name or "unknown CPU", arch=arch, cores=max(cores, 1), flags=frozenset(flags.split()))


@functools.cache
def this_cpu() -> Cpu:
    """This machine's CPU (read once per process)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        text = CPUINFO.read_text(errors="replace")
    except OSError:
        text = ""
    cpu = parse_cpuinfo(text, cores=cores, arch=platform.machine().lower() or "unknown")
    if cpu.name == "unknown CPU" and platform.processor():
        cpu = cpu.model_copy(update={"name": platform.processor()})
    return cpu


VllmWeights = Literal["w8a8", "bf16"]
VllmDtype = Literal["bfloat16", "float32"]


class VllmFormat(BaseModel):
    """How vLLM's CPU build holds the default model on a CPU: the converted weights and the compute dtype."""

    model_config = ConfigDict(frozen=True)

    weights: VllmWeights
    """``w8a8``: linear layers as int8 (``gguf_to_hf.py``); ``bf16``: every weight as bf16."""
    dtype: VllmDtype
    """What vLLM computes in (``--dtype``): bf16 weights are widened to fp32 where the CPU has no bf16 arithmetic."""
    reason: str

    @property
    def label(self) -> str:
        """``w8a8``, ``bf16`` or ``bf16-as-fp32``: the name of the format in messages and directory names."""
        return self.weights if self.dtype == "bfloat16" else f"{self.weights}-as-fp32"


def vllm_format(cpu: Cpu) -> VllmFormat:
    """The weight format vLLM's CPU build runs fastest on ``cpu`` (measured figures: docs/models.md)."""
    if VNNI & cpu.flags:
        return VllmFormat(
            weights="w8a8", dtype="bfloat16",
            reason="int8 dot products (VNNI/AMX): int8 linear layers decoded 12% faster than bf16 and hold 1.3 GB less",
        )  # fmt: skip
    if BF16 & cpu.flags:
        return VllmFormat(weights="bf16", dtype="bfloat16", reason="native bf16 arithmetic, no int8 dot products")
    return VllmFormat(
        weights="bf16", dtype="float32",
        reason="neither int8 dot products nor bf16 arithmetic: int8 recomputes its weight compensation on every "
        "call and bf16 is emulated, so the weights are widened to fp32",
    )  # fmt: skip
