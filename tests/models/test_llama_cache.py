"""The llama.cpp server's prompt cache holds no more than its size: every byte of a kept state is counted, and where
the server keeps no logits of past positions a kept state holds one row of them (agentbon/models/llama_main.py).

The states are llama-cpp-python's own ``LlamaState`` objects with numpy arrays of the sizes a real server makes
(no model is loaded); what the cache holds is summed here from the arrays themselves."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from agentbon.config import ModelConfig, RunConfig
from agentbon.inert import Mode, inert
from agentbon.models.llama_main import counted_cache, keeps_logits
from agentbon.models.llama_server import llama_cpp_command

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp not installed")
VOCAB = 1000


def state(tokens: int, rows: int, kv_bytes: int):
    from llama_cpp.llama import LlamaState

    return LlamaState(
        input_ids=np.arange(64, dtype=np.intc), scores=np.ones((rows, VOCAB), dtype=np.single), n_tokens=tokens,
        llama_state=bytes(kv_bytes), llama_state_size=kv_bytes, seed=0,
    )  # fmt: skip


def held(cache) -> int:
    return sum(len(s.llama_state) + s.scores.size * 4 + s.input_ids.size * 4 for s in cache.cache_state.values())


def test_a_cache_that_keeps_every_positions_logits_counts_them_against_its_size():
    capacity = 3 * (40 * VOCAB * 4 + 1000)  # about three states of 40 positions
    cache = counted_cache(keep_logits=True)(capacity_bytes=capacity)
    for i in range(10):
        cache[(i, 1, 2)] = state(tokens=40, rows=40, kv_bytes=1000)
        assert held(cache) <= capacity
    assert 1 <= len(cache.cache_state) <= 3
    assert (9, 1, 2) in cache.cache_state  # the newest is kept, the oldest went first
    # llama-cpp-python's own cache counts the model state alone: the same ten states would all stay, 40x the size.
    import llama_cpp

    plain = llama_cpp.LlamaRAMCache(capacity_bytes=capacity)
    for i in range(10):
        plain[(i, 1, 2)] = state(tokens=40, rows=40, kv_bytes=1000)
    assert len(plain.cache_state) == 10 and held(plain) > 10 * capacity / 3


def test_without_kept_logits_a_state_holds_one_row_and_restores_into_a_batch():
    cache = counted_cache(keep_logits=False)(capacity_bytes=1 << 20)
    cache[(1, 2, 3)] = state(tokens=300, rows=512, kv_bytes=5000)  # the server's n_batch rows, never written
    kept = cache[(1, 2, 3)]
    assert kept.scores.shape == (1, VOCAB) and kept.n_tokens == 300 and kept.llama_state_size == 5000
    batch = np.zeros((512, VOCAB), dtype=np.single)
    batch[: kept.n_tokens, :] = kept.scores  # what Llama.load_state does with it: the row fills the first positions
    assert held(cache) == 5000 + VOCAB * 4 + 64 * 4


@pytest.mark.parametrize(
    ("argv", "keeps"),
    [([], True), (["--logits_all", "False"], False), (["--logits_all=false"], False), (["--logits_all", "True"], True)],
)
def test_whether_the_server_keeps_logits_is_read_as_llama_cpp_server_reads_it(argv, keeps):
    assert keeps_logits(["--model", "m.gguf", *argv]) is keeps


def test_logprobs_are_served_only_when_asked_and_a_judging_run_asks():
    flags = llama_cpp_command("/m.gguf", port=1, threads=1, ctx=64, alias="q", logprobs=True)
    assert flags[flags.index("--logits_all") + 1] == "True"
    # vLLM always answers logprobs: asking for them there does nothing, and is refused as such.
    config = RunConfig.model_construct(**{**RunConfig().__dict__, "model": ModelConfig(logprobs=True)})
    assert any("model.logprobs" in p for p in inert(Mode(config, "vllm")))
    assert not any("model.logprobs" in p for p in inert(Mode(config, "llama-cpp")))
