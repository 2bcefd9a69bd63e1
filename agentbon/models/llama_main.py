"""llama-cpp-python's OpenAI-compatible server with a prompt cache bounded by what it really holds.

Run as ``python -m agentbon.models.llama_main ARGS`` with the arguments of ``python -m llama_cpp.server``.
llama-cpp-python's RAM cache bounds itself by the model state's bytes alone, but every state it keeps also holds a
copy of the logits rows the model had: every evaluated position where the server keeps all logits (0.6 MiB a
token with Qwen2.5's 151,936-word vocabulary, twenty times the state itself), one batch of rows (311 MiB) where it
does not. A cache of "2 GiB" grew to 19.6 GiB of resident memory in the first 14 minutes of the demo on a 24 GiB
machine. Here the cache counts every byte a kept state holds, and where the server keeps no logits of past
positions (started with ``--logits_all False``; their rows are never written then, and a restored state evaluates
its last token again) a kept state holds one row instead of a batch. See docs/models.md, "llama.cpp's memory".
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence
from typing import Any


def kept_bytes(state: Any) -> int:
    """What one cached ``LlamaState`` holds: the model's state, its logits rows and its token ids."""
    return int(state.llama_state_size) + int(state.scores.nbytes) + int(state.input_ids.nbytes)


def keeps_logits(argv: Sequence[str]) -> bool:
    """Whether the server keeps the logits of every position (``--logits_all``; llama-cpp-python's default is yes)."""
    args = list(argv)
    for i, arg in enumerate(args):
        value = arg.split("=", 1)[1] if arg.startswith("--logits_all=") else None
        if arg == "--logits_all" and i + 1 < len(args):
            value = args[i + 1]
        if value is not None:
            return value.strip().lower() in ("true", "1", "yes")
    return True


def counted_cache(keep_logits: bool) -> Any:
    """A subclass of llama-cpp-python's RAM cache that counts every byte it holds (imported here: the ``local`` extra)."""
    import llama_cpp
    from llama_cpp.llama import LlamaState

    class CountedRAMCache(llama_cpp.LlamaRAMCache):
        @property
        def cache_size(self) -> int:
            return sum(kept_bytes(state) for state in self.cache_state.values())

        def __setitem__(self, key: Sequence[int], value: LlamaState) -> None:
            if not keep_logits:
                value = LlamaState(
                    input_ids=value.input_ids, scores=value.scores[:1].copy(), n_tokens=value.n_tokens,
                    llama_state=value.llama_state, llama_state_size=value.llama_state_size, seed=value.seed,
                )  # fmt: skip
            super().__setitem__(key, value)

    return CountedRAMCache


def main(argv: Sequence[str]) -> None:
    import llama_cpp

    # llama_cpp.server builds its cache as llama_cpp.LlamaRAMCache(...) when the model loads.
    llama_cpp.LlamaRAMCache = counted_cache(keeps_logits(argv))  # type: ignore[misc]
    sys.argv = ["llama_cpp.server", *argv]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
