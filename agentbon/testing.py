"""Fakes shipped in the package for tests (style.md §11): a scripted model. Never used on the product path."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from agentbon.protocols import ChatResponse
from agentbon.types import Usage

Reply = str | Callable[[Sequence[dict[str, Any]]], str] | BaseException


class ScriptedModel:
    """Answers from a script: a list of replies (strings, callables of the messages, or exceptions to raise).

    With ``cycle=True`` the script repeats; otherwise running past its end raises ``IndexError``.
    Token usage is counted as whitespace-separated words, so limits can be tested.
    """

    def __init__(self, replies: Sequence[Reply], name: str = "scripted", cycle: bool = False):
        self.name = name
        self._replies = itertools.cycle(replies) if cycle else iter(replies)
        self.calls: list[dict[str, Any]] = []

    def chat(self, messages: Sequence[dict[str, Any]], *, seed: int | None = None, **sampling: Any) -> ChatResponse:
        self.calls.append({"messages": list(messages), "seed": seed, **sampling})
        try:
            reply = next(self._replies)
        except StopIteration:
            raise IndexError(f"ScriptedModel {self.name!r} ran out of replies after {len(self.calls) - 1}") from None
        if isinstance(reply, BaseException):
            raise reply
        text = reply(messages) if callable(reply) else reply
        prompt = sum(len(str(m.get("content", "")).split()) for m in messages)
        return ChatResponse(
            content=text,
            usage=Usage(prompt_tokens=prompt, completion_tokens=len(text.split()), calls=1),
            finish_reason="stop",
        )
