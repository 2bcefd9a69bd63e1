"""Each local model server, and vLLM in each weight format, on the calibration's workload, on this machine.

For every variant it starts the server as a run would, has it evaluate the shared ~1,500-token prompt once, and
measures the completion tokens it streams back over a window (``models/calibrate.py``: that prompt plus a line of
each request's own, a new request as soon as one ends) with one request
in flight and with the run's number in flight (2 for llama.cpp, 16 for vLLM), in rounds that alternate the variants.
It prints the CPU (``lscpu``'s model name, cores, the flags that matter), the load average before each measurement,
each figure per round and the spread, and the ratio of each variant to llama.cpp in the same round.

Variants: ``llama-cpp``; ``vllm:w8a8`` (int8 linear layers), ``vllm:bf16`` and ``vllm:fp32`` (the bf16 weights
computed in fp32), each where its converted folder exists (``gguf_to_hf.py``).

Usage: python benchmarks/launcher_bench.py [--rounds 2] [--window 30] [--variant llama-cpp --variant vllm:fp32 ...]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

from agentbon.config import ModelConfig
from agentbon.models.calibrate import SLOTS, measure, warm
from agentbon.models.cpu import BF16, VNNI, this_cpu
from agentbon.models.server import LocalServer, free_port
from agentbon.models.vllm_server import CPU_ENV, cpu_build, cpu_env, vllm_command, vllm_python
from agentbon.models.weights import QWEN_CODER_1_5B, models_dir

FORMATS = {"w8a8": ("w8a8", None), "bf16": ("bf16", "bfloat16"), "fp32": ("bf16", "float32")}
"""Variant name -> (converted folder suffix, --dtype)."""


def server(variant: str, config: ModelConfig) -> LocalServer:
    """The not-yet-started server of ``variant``."""
    if variant == "llama-cpp":
        from agentbon.models.llama_server import llama_cpp_server

        return llama_cpp_server(config)
    folder, dtype = FORMATS[variant.removeprefix("vllm:")]
    python = vllm_python()
    model = models_dir() / (QWEN_CODER_1_5B.filename.removesuffix(".gguf") + f"-{folder}")
    port = free_port()
    cpu = cpu_build(python)
    command = vllm_command(python, str(model), port=port, name=config.name, ctx=config.ctx, cpu=cpu, dtype=dtype)
    env = {**(cpu_env(config.vllm_cpu_threads) if cpu else CPU_ENV), "HF_HUB_OFFLINE": "1"}
    return LocalServer(command, port=port, name=variant, env=env, ready_timeout_s=1800.0)


def available() -> list[str]:
    out = ["llama-cpp"]
    try:
        vllm_python()
    except Exception:  # noqa: BLE001 - no vLLM here: llama.cpp alone
        return out
    for name, (folder, _) in FORMATS.items():
        if (models_dir() / (QWEN_CODER_1_5B.filename.removesuffix(".gguf") + f"-{folder}") / "config.json").is_file():
            out.append(f"vllm:{name}")
    return out


def lscpu_model() -> str:
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Model name")), "?")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--window", type=float, default=30.0)
    ap.add_argument("--variant", action="append", help="llama-cpp, vllm:w8a8, vllm:bf16, vllm:fp32 (default: all found)")
    args = ap.parse_args()
    cpu = this_cpu()
    variants = args.variant or available()
    flags = sorted(cpu.flags & ({"avx2", "avx512f"} | VNNI | BF16))
    print(f"CPU: {lscpu_model()} ({cpu.describe()}; flags that matter: {', '.join(flags) or 'none'})")
    print(f"variants: {', '.join(variants)}; window {args.window:g}s; rounds {args.rounds}, alternating\n")
    config = ModelConfig(ctx=8192)
    results: dict[tuple[str, int], list[float]] = {}
    for r in range(args.rounds):
        for variant in variants if r % 2 == 0 else list(reversed(variants)):
            s = server(variant, config)
            t0 = time.monotonic()
            endpoint = s.start()
            ready = time.monotonic() - t0
            try:
                print(f"round {r + 1} {variant:10s} ready {ready:6.1f}s, shared prompt evaluated in "
                      f"{warm(endpoint, config.name):.1f}s", flush=True)
                for in_flight in (1, SLOTS["llama-cpp" if variant == "llama-cpp" else "vllm"]):
                    load = os.getloadavg()[0]
                    tokens, seconds = measure(endpoint, config.name, in_flight=in_flight, window_s=args.window)
                    rate = tokens / seconds if seconds else 0.0
                    results.setdefault((variant, in_flight), []).append(rate)
                    print(
                        f"round {r + 1} {variant:10s} ready {ready:6.1f}s  {in_flight:2d} in flight: {tokens:5d} tokens "
                        f"in {seconds:4.1f}s = {rate:6.2f} tokens/s  (load {load:.2f})",
                        flush=True,
                    )
            finally:
                s.stop()
    print("\nsummary (completion tokens/s; mean, min-max over rounds; ratio to llama.cpp at its own slots):")
    base = statistics.mean(results.get(("llama-cpp", SLOTS["llama-cpp"]), [0.0])) or None
    for (variant, in_flight), rates in sorted(results.items()):
        mean = statistics.mean(rates)
        ratio = f"  x{mean / base:.2f}" if base else ""
        print(f"  {variant:10s} {in_flight:2d} in flight: {mean:6.2f} ({min(rates):.2f}-{max(rates):.2f}){ratio}")


if __name__ == "__main__":
    main()
