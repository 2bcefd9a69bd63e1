"""Reading OpenAI-compatible replies: sort HTTP errors into kinds, turn choices into ``ChatResponse``s."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from agentbon.errors import ModelError, ServerFailure
from agentbon.protocols import ChatResponse
from agentbon.types import Usage

ErrorKind = Literal["dead", "context", "auth", "not_found", "parameter", "client", "retry"]

# vLLM keeps its API process up after the engine core dies and answers every request with HTTP 500
# naming one of these (docs/models.md, "A known crash"); retrying the same server cannot help.
_DEAD = re.compile(
    r"EngineDeadError|engine\s+(core\s+)?is\s+dead|EngineCore encountered an issue|"
    r"background loop (has )?errored|engine loop is not running|AsyncEngineDeadError",
    re.IGNORECASE,
)
_CONTEXT = re.compile(
    r"context (length|window)|maximum context|max_model_len|exceed\w* (the )?(context|maximum)|"
    r"prompt is too long|too many tokens|longer than the maximum model length",
    re.IGNORECASE,
)
# An unknown model name: vLLM "The model `X` does not exist." (404), OpenAI code "model_not_found" (404; some
# proxies answer 400).
_UNKNOWN_MODEL = re.compile(r"model_not_found|\bmodel\b[^.]{0,200}\bdoes not exist|unknown model", re.IGNORECASE)
# A request parameter the server refuses whatever the conversation: every request carries it, so every one fails.
_PARAMETER = re.compile(
    r"unsupported[_ ](parameter|value)|unknown[_ ]parameter|unrecognized request argument|"
    r"extra inputs are not permitted|extra_forbidden",
    re.IGNORECASE,
)
_CONVERSATION_FIELDS = frozenset({"messages", "prompt", "input", "input_tokens"})
RETRY_STATUSES = frozenset({408, 429, 502, 503, 504})


def classify_status(status: int, body: str) -> ErrorKind:
    """What an HTTP error status (>= 400) means for the caller: retry, or which error to raise.

    ``dead``: the engine is dead (restart the server). ``retry``: transient (5xx, 429, 408). ``auth`` (401, 403),
    ``not_found`` (404: unknown model name, or no such path under the endpoint) and ``parameter`` (a 400 / 422 that
    names a request parameter, not the conversation: the same refusal awaits every request) are the endpoint's
    configuration: no retry of the rollout fixes them. ``context``: this conversation is too long (the rollout's own
    outcome). ``client``: any other 4xx, taken as this request's own fault (a conversation the server refuses).
    """
    if status >= 500 and _DEAD.search(body):
        return "dead"
    if status in RETRY_STATUSES or status >= 500:
        return "retry"
    if status in (401, 403):
        return "auth"
    if status == 404 or _UNKNOWN_MODEL.search(body):
        return "not_found"
    if _CONTEXT.search(body):  # before "parameter": vLLM names max_tokens when prompt + max_tokens overflow
        return "context"
    if _PARAMETER.search(body) or _names_parameter(body):
        return "parameter"
    return "client"


def _names_parameter(body: str) -> bool:
    """True when an error body points at a request parameter other than the conversation (OpenAI and vLLM
    ``error.param``; FastAPI / pydantic 422 ``detail[].loc``)."""
    try:
        data = json.loads(body)
    except ValueError:
        return False
    if not isinstance(data, dict):
        return False
    error = data.get("error")
    if isinstance(error, dict) and isinstance(error.get("param"), str) and error["param"]:
        return error["param"].split(".")[0] not in _CONVERSATION_FIELDS
    detail = data.get("detail")
    if isinstance(detail, list):
        fields = [d["loc"][1] for d in detail if isinstance(d, dict) and isinstance(d.get("loc"), list | tuple)
                  and len(d["loc"]) > 1 and d["loc"][0] == "body"]  # fmt: skip
        return bool(fields) and all(f not in _CONVERSATION_FIELDS for f in fields)
    return False


def parse_choices(data: dict[str, Any], *, latency_s: float, where: str) -> list[ChatResponse]:
    """One ``ChatResponse`` per choice; the reply's usage is split so the parts sum to the whole."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        error = data.get("error")
        if error is not None and _DEAD.search(str(error)):
            raise ServerFailure(f"{where}: the engine is dead: {str(error)[:300]}")
        raise ModelError(f"{where}: reply has no choices: {str(error or data)[:300]}")
    usages = _split_usage(data.get("usage"), len(choices), where)
    out = []
    for i, choice in enumerate(sorted(choices, key=lambda c: c.get("index", 0) if isinstance(c, dict) else 0)):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise ModelError(f"{where}: choice {i} has no message: {str(choice)[:200]}")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise ModelError(f"{where}: choice {i} content is {type(content).__name__}, not a string")
        out.append(
            ChatResponse(
                content=content or "",
                usage=usages[i],
                finish_reason=choice.get("finish_reason"),
                latency_s=latency_s,
                logprobs=_logprobs(choice.get("logprobs")),
            )
        )
    return out


def _split_usage(raw: Any, n: int, where: str) -> list[Usage]:
    if raw is None:
        return [Usage(calls=1) for _ in range(n)]
    if not isinstance(raw, dict):
        raise ModelError(f"{where}: usage is {type(raw).__name__}, not an object")
    try:
        prompt = int(raw.get("prompt_tokens") or 0)
        completion = int(raw.get("completion_tokens") or 0)
        details = raw.get("prompt_tokens_details") or {}
        cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    except (TypeError, ValueError) as e:
        raise ModelError(f"{where}: usage has a non-integer count: {raw}") from e
    # The prompt was read once for all n choices: charge it to the first so totals stay true.
    share, extra = divmod(completion, n)
    return [
        Usage(
            prompt_tokens=prompt if i == 0 else 0,
            cached_tokens=cached if i == 0 else 0,
            completion_tokens=share + (extra if i == 0 else 0),
            calls=1,
        )
        for i in range(n)
    ]


def _logprobs(raw: Any) -> list[dict[str, Any]] | None:
    """Per-token logprobs in the chat format (``[{token, logprob, top_logprobs: [...]}, ...]``)."""
    if not isinstance(raw, dict):
        return None
    if isinstance(raw.get("content"), list):
        return [t for t in raw["content"] if isinstance(t, dict)]
    tokens = raw.get("tokens")
    if isinstance(tokens, list):  # the legacy completions shape some servers still use for chat
        lps = raw.get("token_logprobs") or [None] * len(tokens)
        tops = raw.get("top_logprobs") or [None] * len(tokens)
        return [
            {
                "token": tok,
                "logprob": lp,
                "top_logprobs": [{"token": k, "logprob": v} for k, v in (top or {}).items()],
            }
            for tok, lp, top in zip(tokens, lps, tops, strict=False)
        ]
    return None
