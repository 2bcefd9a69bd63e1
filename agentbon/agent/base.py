"""What both agents share: the exits that carry the message to record, prompt templates, and the conversation.

A ``Conversation`` holds the trajectory (OpenAI chat messages, each with an ``extra`` field), sums usage
and model time, enforces the step, token and wall-time limits before every model call, and derives a
seed per call from the rollout's seed and the step, so a rollout replays exactly where the server
honours seeds.
"""

from __future__ import annotations

import hashlib
import re
import time
from typing import Any

from agentbon.agent.templates import environment
from agentbon.config import AgentConfig, ModelConfig
from agentbon.errors import ContextLengthExceeded, InfraError
from agentbon.protocols import AgentResult, ChatResponse, Model
from agentbon.types import Usage


class AgentExit(Exception):
    """Ends a rollout normally; ``status`` is the ``RolloutStatus``, the class name the exit status."""

    status = "submitted"


class Submitted(AgentExit):
    """The agent submitted its work (the message is the submitting output)."""


class LimitsExceeded(AgentExit):
    """A step, token or wall-time limit was reached."""

    def __init__(self, status: str, message: str):
        super().__init__(message)
        self.status = status


class FormatError(AgentExit):
    """A reply the agent cannot act on; fed back to the model until ``malformed_limit`` is reached."""

    status = "format_error"


def render(config: AgentConfig, name: str, **variables: Any) -> str:
    """Render prompt template ``name`` (the run's ``prompts_dir`` first, then the built-in ones: agent/templates.py)."""
    return environment(config).get_template(name).render(**variables).strip() + "\n"


def call_seed(seed: int, step: int) -> int:
    """A 31-bit seed for model call ``step`` of a rollout whose seed is ``seed``."""
    digest = hashlib.sha256(f"{seed}/{step}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


class Conversation:
    """The trajectory of one rollout plus its budget: steps (model calls), tokens and wall time."""

    def __init__(self, config: AgentConfig, sampling: ModelConfig | None, seed: int):
        self.config, self.sampling, self.seed = config, sampling, seed
        self.messages: list[dict[str, Any]] = []
        self.usage = Usage()
        self.steps = 0
        self.malformed = 0
        self.model_s = 0.0
        self.started = time.monotonic()
        self.cut_off = False
        """True when the last reply stopped at ``max_tokens`` (the feedback says so)."""
        self.unusable: str | None = None
        """Why the last reply could not be used (an ``UnusableCause``); None after a usable one. A rollout that ends
        without submitting keeps it (``Rollout.unusable``)."""

    def add(self, role: str, content: str, **extra: Any) -> dict[str, Any]:
        """Append a message; ``extra`` records what the chat format has no place for."""
        message = {
            "role": role,
            "content": content,
            "extra": {"step": self.steps, "elapsed_s": round(self.elapsed(), 3), **extra},
        }
        self.messages.append(message)
        return message

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def remaining_s(self) -> float:
        """Seconds left of the wall-time limit."""
        return self.config.time_limit_s - self.elapsed()

    def check_limits(self) -> None:
        """Raise ``LimitsExceeded`` when another model call would go past a limit."""
        c = self.config
        if self.steps >= c.step_limit:
            raise LimitsExceeded("step_limit", f"step limit reached: {self.steps} of {c.step_limit} model calls")
        tokens = self.usage.prompt_tokens + self.usage.completion_tokens
        if tokens >= c.token_limit:
            raise LimitsExceeded("token_limit", f"token limit reached: {tokens} of {c.token_limit} tokens")
        if self.remaining_s() <= 0:
            raise LimitsExceeded("time_limit", f"time limit reached: {self.elapsed():.0f} of {c.time_limit_s:.0f} s")

    def call(self, model: Model, wire: list[dict[str, Any]]) -> tuple[ChatResponse, dict[str, Any]]:
        """Check the limits, ask the model for the ``wire`` messages and count the call; return the reply and what
        the trajectory records of it (step, seed, usage, latency, finish reason)."""
        self.check_limits()
        self.steps += 1
        seed = call_seed(self.seed, self.steps)
        t0 = time.monotonic()
        # Without a sampling config the model client's own defaults (its ModelConfig) apply.
        s = self.sampling
        kwargs = {} if s is None else s.sampling()
        response = model.chat(wire, seed=seed, **kwargs)
        latency = time.monotonic() - t0
        self.model_s += latency
        self.usage = self.usage + response.usage
        self.cut_off = response.finish_reason == "length"
        self.unusable = None
        u = response.usage
        return response, {
            "step": self.steps,
            "elapsed_s": round(self.elapsed(), 3),
            "seed": seed,
            "usage": {
                "prompt_tokens": u.prompt_tokens,
                "completion_tokens": u.completion_tokens,
                "cached_tokens": u.cached_tokens,
            },
            "model_latency_s": round(latency, 4),
            "finish_reason": response.finish_reason,
        }

    def query(self, model: Model) -> str:
        """Check the limits, ask the model (messages without ``extra``) and record its reply."""
        response, extra = self.call(model, [{"role": m["role"], "content": m["content"]} for m in self.messages])
        self.add("assistant", response.content, **{k: v for k, v in extra.items() if k not in ("step", "elapsed_s")})
        return response.content

    def query_whole(self, model: Model, continuations: int, request: str) -> str:
        """``query``, and while the reply stops at ``max_tokens``, ask up to ``continuations`` times for the rest of it
        (the reply so far as the assistant's turn, then ``request``); the pieces joined into one reply.

        Each continuation is a model call like any (limits checked first, counted, seeded, its usage summed) and is
        in the trajectory as the model saw it: the request (``kind: continue``), then the piece, whose ``extra``
        holds ``continuation`` (1, 2, ...). ``cut_off`` stays True when the last piece was cut too. A limit that
        leaves no room for a continuation ends the continuing, not the reply: what came is read, and the next call
        meets the limit. So does a continuation the server refuses as longer than the model's context: its request
        leaves the trajectory (it was never answered) and the cut piece's ``extra`` holds ``continuation_refused``.
        """
        reply = self.query(model)
        for n in range(1, continuations + 1):
            if not self.cut_off:
                break
            try:
                self.check_limits()
            except LimitsExceeded:
                break
            self.add("user", request, kind="continue", continuation=n)
            try:
                piece = self.query(model)
            except ContextLengthExceeded as e:
                self.messages.pop()
                self.messages[-1]["extra"]["continuation_refused"] = str(e)
                break
            self.messages[-1]["extra"]["continuation"] = n
            reply = join_pieces(reply, piece)
        return reply

    def result(self, status: str, exit_status: str, message: str = "") -> AgentResult:
        """The ``AgentResult``; the last message's ``extra`` records how the rollout ended."""
        if self.messages:
            self.messages[-1]["extra"].update(exit_status=exit_status, status=status, exit_message=message)
        return AgentResult(
            messages=self.messages,
            status=status,
            exit_status=exit_status,
            steps=self.steps,
            malformed=self.malformed,
            unusable=self.unusable if status != "submitted" else None,
            usage=self.usage,
            model_s=round(self.model_s, 4),
        )

    def attach_partial(self, error: BaseException) -> None:
        """Hang the trajectory so far on an escaping error (``error.agent_result``) for the rollout boundary."""
        status = "infra_error" if isinstance(error, InfraError) else "agent_error"
        error.agent_result = self.result(status, type(error).__name__, str(error))  # type: ignore[attr-defined]


_PREAMBLE = re.compile(r"^(sure|ok(ay)?|certainly|here('s| is| are)|(the )?rest)\b.*:$", re.IGNORECASE)
_STARTS_LINE = re.compile(r"^[ \t]*(```|<{5,9}[ \t]*SEARCH|(={5,9}|>{5,9}[ \t]*(REPLACE)?)[ \t]*(\n|$))")


def _preamble(line: str) -> bool:
    """A continuation's first line that announces it (``Here's the continuation:``) rather than continues."""
    words = line.split()
    if not 2 <= len(words) <= 12 or line[:1].isspace():
        return False
    return bool(_PREAMBLE.match(line.strip())) or "continu" in line.lower()


def join_pieces(head: str, tail: str, min_overlap: int = 12) -> str:
    """A reply cut at ``max_tokens`` (``head``) joined with its continuation (``tail``).

    A first line of ``tail`` that announces the continuation (``Here's the continuation:``, asked for or not) is
    dropped, with the blank lines after it. A continuation that starts by repeating the end of ``head`` (its last,
    cut line from the start, or more) has the repeat dropped: the longest end of ``head`` that ``tail`` starts with,
    at least ``min_overlap`` characters or the whole cut line. A code fence that ``tail`` opens first while ``head``
    is inside an open fence is dropped; one that it opens, or an edit block's marker line, after a cut line starts a
    line of its own.
    """
    first, _, rest = tail.partition("\n")
    if rest and _preamble(first):
        tail = rest.lstrip("\n")
        first, _, rest = tail.partition("\n")
    fences = sum(1 for line in head.split("\n") if line.lstrip().startswith("```"))
    if first.lstrip().startswith("```") and fences % 2 == 1 and rest:
        tail = rest
    cut_line = head[head.rfind("\n") + 1 :]
    for size in range(min(len(head), len(tail)), 0, -1):
        if (size >= min_overlap or size == len(cut_line)) and head.endswith(tail[:size]):
            return head + tail[size:]
    if cut_line and _STARTS_LINE.match(tail):
        return head + "\n" + tail
    return head + tail


def partial_result(error: BaseException) -> AgentResult | None:
    """The trajectory an agent had when ``error`` escaped its ``run`` (None when it has none)."""
    return getattr(error, "agent_result", None)
