"""The selection preflight builds every configured selector before any rollout runs; a judge critic whose model the
run serves itself (no endpoint given) is built against the server that will be started, not refused for lacking one."""

from __future__ import annotations

import pytest

from agentbon.config import RunConfig
from agentbon.errors import ConfigError
from agentbon.orchestrate.factories import ServedLater, default_selector
from agentbon.orchestrate.selection_stage import SelectionStage

SELECT = {"critic": "judge", "selectors": ["tests-then-critic", "critic", "soft-bon", "oracle"]}


@pytest.mark.parametrize("launcher", ["llama-cpp", "vllm", "vllm-actors"])
def test_a_judge_on_a_server_the_run_starts_passes_the_preflight(tmp_path, launcher):
    config = RunConfig.model_validate({"select": SELECT, "model": {"launcher": launcher, "path": str(tmp_path)}})
    stage = SelectionStage(config, default_selector)
    stage.preflight()  # before: "select.critic=judge needs a model"
    judge = stage._selector("critic").critic
    assert isinstance(judge.model, ServedLater)
    with pytest.raises(RuntimeError, match="before the run's model server started"):
        judge.model.chat([{"role": "user", "content": "x"}])


def test_once_started_the_judge_talks_to_the_served_endpoint(tmp_path):
    config = RunConfig.model_validate({"select": SELECT, "model": {"launcher": "llama-cpp", "path": str(tmp_path)}})
    # As the batch hands the driver the config once the service started its server (models/service.py).
    started = config.model_copy(update={"model": config.model.model_copy(update={"endpoint": "http://127.0.0.1:9/v1"})})
    judge = default_selector("critic", started).critic  # type: ignore[attr-defined]
    assert not isinstance(judge.model, ServedLater)


def test_a_wrong_selector_name_still_fails_the_preflight(tmp_path):
    config = RunConfig.model_validate({"select": {**SELECT, "selectors": ["critic", "nope"]}})
    with pytest.raises(ConfigError, match="'nope'"):
        SelectionStage(config, default_selector).preflight()
