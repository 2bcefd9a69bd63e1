"""A run whose selectors ask the LLM judge starts its model server with logprobs on (the judge reads p(YES) from
them; llama.cpp serves them only when started so, at a memory cost, docs/models.md "llama.cpp's memory"); a run
that does not ask the judge starts it without them."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from orch_support import config, fakes, make_tasks

from agentbon.orchestrate import run_batch
from agentbon.store import RunStore
from agentbon.testing import FakeService


@pytest.mark.parametrize(
    ("critic", "launcher", "asked"),
    [("judge", "llama-cpp", True), ("auto", "llama-cpp", False), ("judge", "vllm", False)],  # vLLM always serves them
)
def test_the_server_serves_logprobs_exactly_when_a_selector_asks_the_judge(
    tmp_path: Path, critic: str, launcher: str, asked: bool
) -> None:
    started: list[Any] = []

    class Recording(FakeService):
        def launch(self, *, ray_address: str | None = None) -> None:
            started.append(self.config)  # the service that starts the server (another one only chose the launcher)

    factories = dataclasses.replace(fakes(tmp_path), server=Recording)
    cfg = config(
        tmp_path, f"select.critic={critic}", "select.selectors=[tests-then-critic]", f"model.launcher={launcher}",
        n=1, run_id="r",
    )
    result = run_batch(make_tasks(tmp_path, ["a"]), cfg, factories=factories)
    assert started and {model.logprobs for model in started} == {asked}
    assert RunStore(result.path).config_data()["model"]["logprobs"] is asked  # the run records how its server ran
