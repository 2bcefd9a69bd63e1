"""Start time and token throughput of a local model server (llama.cpp by default) through agentbon's client.

Prints: seconds until the server answered; prefill tokens/s (long fresh prompt, 1 output token); decode
tokens/s (short prompt, long answer); and aggregate tokens/s of a fan-out of N seeded samples.
Usage: python benchmarks/model_server_bench.py [--launcher llama-cpp|vllm] [--threads 2] [--n 4]
"""

from __future__ import annotations

import argparse
import time
import uuid

from agentbon.config import ModelConfig
from agentbon.models import client_for, local_server

CODE = "def f{i}(xs):\n    return [x * {i} for x in xs if x % {m} == 0]\n\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--launcher", default="llama-cpp", choices=["llama-cpp", "vllm"])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--decode-tokens", type=int, default=128)
    args = ap.parse_args()
    cfg = ModelConfig(launcher=args.launcher, threads=args.threads, ctx=4096, temperature=0.8)
    server = local_server(cfg)
    with server as endpoint, client_for(cfg, endpoint, supports_n=args.launcher == "vllm") as model:
        print(f"launcher {args.launcher}, threads {args.threads}: ready in {server.started_s:.2f}s")
        # A nonce first, so that no earlier prompt prefix is reused from the cache.
        source = f"# {uuid.uuid4()}\n" + "".join(CODE.format(i=i, m=i % 5 + 2) for i in range(40))
        prompt = [{"role": "user", "content": source + "\nName one function above."}]
        r = model.chat(prompt, max_tokens=1, seed=0)
        print(
            f"prefill: {r.usage.prompt_tokens} tokens in {r.latency_s:.2f}s = {r.usage.prompt_tokens / r.latency_s:.0f} tok/s"
        )
        ask = [{"role": "user", "content": f"({uuid.uuid4().hex[:6]}) Write a long Python tutorial on sorting."}]
        r = model.chat(ask, max_tokens=args.decode_tokens, seed=0, temperature=0.0)
        rate = r.usage.completion_tokens / r.latency_s
        print(f"decode: {r.usage.completion_tokens} tokens in {r.latency_s:.2f}s = {rate:.1f} tok/s (incl. prefill)")
        start = time.monotonic()
        out = model.chat_n(ask, args.n, seeds=list(range(args.n)), max_tokens=args.decode_tokens)
        wall = time.monotonic() - start
        tokens = sum(o.usage.completion_tokens for o in out)
        print(f"fan-out n={args.n}: {tokens} tokens in {wall:.2f}s = {tokens / wall:.1f} tok/s aggregate")


if __name__ == "__main__":
    main()
