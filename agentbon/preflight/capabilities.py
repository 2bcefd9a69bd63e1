"""What the run's selectors need of the model server: the scale judge and the tournaments' pairwise judge read their
scores from the answer's logprobs, so a server that gives none is refused before the first rollout, naming who
needs them. The YES/NO judge (``select.critic=judge``) is not: it reads a parsed answer where logprobs are absent.

Only a given endpoint is asked (one short chat with ``logprobs``): a llama.cpp server the run starts serves them
where a judge asks (orchestrate/batch.py), and vLLM always does.
"""

from __future__ import annotations

from typing import Any

import httpx

from agentbon.config import RunConfig
from agentbon.preflight.base import Context, Problem

PROBE_TIMEOUT_S = 30.0
"""How long the probe waits on its one-token answer (a loaded server answers in well under a second)."""


def needs_logprobs(config: RunConfig) -> list[str]:
    """The parts of the config that read the model's logprobs (empty where none does)."""
    from agentbon.inert import Mode, compares, critics

    out = []
    if config.select.critic == "scale-judge" and critics(Mode(config, config.model.launcher)):
        out.append("select.critic=scale-judge (its expected rating)")
    if config.select.comparator != "critic" and compares(config):
        names = [n for n in config.select.selectors if n in ("tournament", "tests-then-tournament")]
        out.append(f"{', '.join(names)} with select.comparator={config.select.comparator} (the pairwise judge's p(A))")
    return out


def answers_logprobs(body: Any) -> bool:
    """Whether an OpenAI chat-completion body carries logprobs for its first choice (chat or completion format)."""
    try:
        found = body["choices"][0].get("logprobs")
    except (KeyError, IndexError, TypeError, AttributeError):
        return False
    if not isinstance(found, dict):
        return False
    return bool(found.get("content") or found.get("tokens") or found.get("top_logprobs"))


def check_logprobs(ctx: Context) -> list[Problem]:
    """Each given endpoint answers a request for logprobs with them, where a selector reads them."""
    needing = needs_logprobs(ctx.config)
    model = ctx.config.model
    if not needing or not model.urls() or not ctx.real("model") or not ctx.real("server"):
        return []
    problems = []
    for url in model.urls():
        body = {
            "model": model.name, "messages": [{"role": "user", "content": "Answer with one letter: A or B."}],
            "max_tokens": 1, "temperature": 0.0, "logprobs": True, "top_logprobs": 5,
        }  # fmt: skip
        headers = {"Authorization": f"Bearer {model.api_key}"} if model.api_key else {}
        try:
            with httpx.Client(timeout=PROBE_TIMEOUT_S, trust_env=False, headers=headers) as http:
                reply = http.post(url.rstrip("/") + "/chat/completions", json=body)
            answer = reply.json() if reply.status_code < 400 else None
        except (httpx.HTTPError, ValueError):
            continue  # no answer at all: the endpoint check says why
        if answer is None or not answers_logprobs(answer):
            got = f"HTTP {reply.status_code}" if answer is None else "an answer without them"
            problems.append(Problem(
                check="logprobs",
                cause=f"{'; '.join(needing)} read(s) scores from the model's logprobs, and the model server at {url} "
                f"gave {got} when asked for them",
                fix="serve the model with logprobs (vLLM gives them; a llama.cpp server needs --logits_all, "
                "model.logprobs=true where agentbon serves it), or -c select.comparator=critic / another select.critic",
            ))  # fmt: skip
    return problems
