"""The LLM judge: asks a model whether a patch resolves the issue; p(YES) from top logprobs where given.

The prompt template lives in ``verifiers/critic/judge.md`` (placeholders ``{problem}``, ``{patch}``,
``{evidence}``, ``{trajectory}``, filled in one pass so text inside a patch is never re-substituted).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

from agentbon.protocols import ChatResponse, Model
from agentbon.types import Rollout, Task, Verdict

_SLOT = re.compile(r"\{([a-z_]+)\}")
YES, NO = ("YES", "Y"), ("NO", "N")


def default_template(name: str = "judge") -> str:
    """A judge's prompt template from ``verifiers/critic/`` (``judge``, ``compare``, ``scale``)."""
    from agentbon.verify import verifiers_dir

    return (verifiers_dir() / "critic" / f"{name}.md").read_text()


def fill(template: str, values: dict[str, str]) -> str:
    """The template with each placeholder of ``values`` replaced once (other braces are left as they are)."""
    return _SLOT.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def trim_trajectory(messages: list[dict[str, Any]], budget: int = 3000, per_message: int = 600) -> str:
    """The last messages of a trajectory (the system prompt and first user turn repeat the problem), capped."""
    parts: list[str] = []
    used = 0
    for msg in reversed(messages[2:] if len(messages) > 2 else messages):
        text = str(msg.get("content") or "")
        if len(text) > per_message:
            text = text[: per_message // 2] + "\n[...]\n" + text[-per_message // 2 :]
        piece = f"[{msg.get('role', '?')}] {text}"
        if used + len(piece) > budget:
            break
        parts.append(piece)
        used += len(piece)
    return "\n\n".join(reversed(parts)) or "(no trajectory recorded)"


def p_choice(response: ChatResponse, first: tuple[str, ...], second: tuple[str, ...]) -> tuple[float, str]:
    """p(first answer) against the second from the top logprobs of the first answer token that is either; a parsed
    answer where logprobs are absent (1 or 0), 0.5 where neither."""
    for step in (response.logprobs or [])[:5]:
        yes = no = 0.0
        for cand in step.get("top_logprobs") or [{"token": step.get("token"), "logprob": step.get("logprob")}]:
            token = str(cand.get("token") or "").strip().strip("*").upper()
            if cand.get("logprob") is None:
                continue
            if token in first:
                yes += math.exp(cand["logprob"])
            elif token in second:
                no += math.exp(cand["logprob"])
        if yes or no:
            if yes and no:
                return yes / (yes + no), "logprobs"
            return (min(yes, 1.0), "logprobs") if yes else (max(1.0 - no, 0.0), "logprobs")
    words = re.findall(r"[A-Za-z]+", response.content.upper())
    if words and words[0] in first:
        return 1.0, "parsed"
    if words and words[0] in second:
        return 0.0, "parsed"
    return 0.5, "unparsed"


def p_yes(response: ChatResponse) -> tuple[float, str]:
    """p(YES) from the top logprobs of the first answer token; a parsed answer where logprobs are absent."""
    return p_choice(response, YES, NO)


def cut_patch(patch: str, limit: int) -> str:
    """The patch, cut at ``limit`` characters with a marker; ``(empty patch)`` for none."""
    text = patch if len(patch) <= limit else patch[:limit] + "\n[... patch cut ...]"
    return text or "(empty patch)"


def evidence_text(evidence: Verdict | None) -> str:
    """The visible tests' result as the judges show it."""
    if evidence is None or evidence.status == "undecided":
        return "No visible tests were run."
    return f"{evidence.status}: {evidence.reason}\n" + json.dumps(evidence.tests, indent=0)[:1500]


def slots(
    task: Task, rollout: Rollout, evidence: Verdict | None,
    trajectories: Callable[[str], list[dict[str, Any]]] | None, max_patch_chars: int,
) -> dict[str, str]:  # fmt: skip
    """What a pointwise judge's template shows: the problem, the patch, the visible tests, the trajectory."""
    messages = trajectories(rollout.rollout_id) if trajectories else []
    return {
        "problem": task.problem_statement[:6000],
        "patch": cut_patch(rollout.patch, max_patch_chars),
        "evidence": evidence_text(evidence),
        "trajectory": trim_trajectory(messages),
    }


class LLMJudge:
    """protocols.Critic asking a model (local server, vLLM) for a YES/NO verdict on each patch."""

    name = "judge"

    def __init__(
        self,
        model: Model,
        template: str | None = None,
        trajectories: Callable[[str], list[dict[str, Any]]] | None = None,
        max_patch_chars: int = 6000,
    ):
        self.model = model
        self.template = template or default_template()
        self.trajectories = trajectories
        self.max_patch_chars = max_patch_chars
        self.sources: dict[str, int] = {}
        """How many scores came from logprobs, a parsed answer, or neither."""
        self.tokens: dict[str, int] = {}
        """Rollout id → tokens its latest scoring spent (prompt and completion, as the server counted them)."""

    def prompt(self, task: Task, rollout: Rollout, evidence: Verdict | None) -> str:
        return fill(self.template, slots(task, rollout, evidence, self.trajectories, self.max_patch_chars))

    def score(self, task: Task, rollout: Rollout, evidence: Verdict | None) -> float:
        if not rollout.patch.strip():
            return 0.0
        messages = [{"role": "user", "content": self.prompt(task, rollout, evidence)}]
        response = self.model.chat(messages, seed=0, temperature=0.0, max_tokens=3, logprobs=True, top_logprobs=5)
        p, source = p_yes(response)
        self.sources[source] = self.sources.get(source, 0) + 1
        self.tokens[rollout.rollout_id] = response.usage.prompt_tokens + response.usage.completion_tokens
        return p
