"""Config values out of range are refused at load, with the key and the allowed range named."""

from __future__ import annotations

import pytest

from agentbon.config import RunConfig, load_config, memory_bytes
from agentbon.errors import ConfigError

BAD = [
    ("n=-3", "n: must be >= 1 (got -3)"),
    ("n=0", "n: must be >= 1"),
    ("max_pending=0", "max_pending: must be >= 1 (got 0)"),
    ("infra_retries=-1", "infra_retries: must be >= 0"),
    ("deadline_s=-5", "deadline_s: must be > 0"),
    ("deadline_s=.nan", "deadline_s: Input should be a finite number"),
    ("sandbox.exec_timeout_s=-1", "sandbox.exec_timeout_s: must be > 0"),
    ("sandbox.setup_timeout_s=0", "sandbox.setup_timeout_s: must be > 0"),
    ("sandbox.cpus=0", "sandbox.cpus: must be > 0"),
    ("sandbox.pids=0", "sandbox.pids: must be >= 1"),
    ("sandbox.output_limit=0", "sandbox.output_limit: must be >= 1"),
    ("sandbox.memory=lots", "sandbox.memory: 'lots' is not a docker memory size"),
    ("sandbox.memory=2t", "sandbox.memory: '2t' is not a docker memory size"),
    ("sandbox.memory=1k", "sandbox.memory: '1k' is under Docker's minimum of 6m"),
    ("sandbox.network=no network", "sandbox.network: 'no network' is not a network"),
    ("sandbox.network=container:-x", "sandbox.network: 'container:-x' is not a network"),
    ("ray_address=ray://head:10001", "ray_address: 'ray://head:10001' is a Ray Client address"),
    ("ship=sometimes", "ship: Input should be 'auto', 'always' or 'never'"),
    ("report.confidence=2", "report.confidence: must be > 0 and < 1 (got 2)"),
    ("report.confidence=1", "report.confidence: must be > 0 and < 1"),
    ("report.bootstrap=0", "report.bootstrap: must be >= 1"),
    ("report.targets=[0.5, 1.5]", "report.targets.1:"),
    ("report.usd_per_sandbox_hour=-1", "report.usd_per_sandbox_hour: must be >= 0"),
    ("verify.concurrency=0", "verify.concurrency: must be >= 1"),
    ("verify.timeout_s=0", "verify.timeout_s: must be > 0"),
    ("model.temperature=-0.1", "model.temperature: must be >= 0"),
    ("model.top_p=0", "model.top_p: must be > 0 and <= 1"),
    ("model.top_p=1.5", "model.top_p: must be > 0 and <= 1"),
    ("model.max_tokens=0", "model.max_tokens: must be >= 1"),
    ("model.retries=-1", "model.retries: must be >= 0"),
    ("model.timeout_s=0", "model.timeout_s: must be > 0"),
    ("model.threads=0", "model.threads: must be >= 1"),
    ("model.ctx=0", "model.ctx: must be >= 1"),
    ("model.name=", "model.name:"),
    ("model.endpoint=localhost:8000", "model.endpoint: 'localhost:8000' is not an http(s) URL"),
    ("agent.step_limit=0", "agent.step_limit: must be >= 1"),
    ("agent.token_limit=0", "agent.token_limit: must be >= 1"),
    ("agent.time_limit_s=-1", "agent.time_limit_s: must be > 0"),
    ("agent.command_timeout_s=0", "agent.command_timeout_s: must be > 0"),
    ("agent.observation_chars=0", "agent.observation_chars: must be >= 1"),
    ("agent.context_lines=0", "agent.context_lines: must be >= 1"),
    ("select.soft_temperature=0", "select.soft_temperature: must be > 0"),
    ("select.selectors=[]", "select.selectors:"),
    ("run_id=../elsewhere", "run_id: '../elsewhere' is not a directory name"),
    ("run_id=a/b", "run_id: 'a/b' is not a directory name"),
]


@pytest.mark.parametrize(("override", "message"), BAD, ids=[o for o, _ in BAD])
def test_an_out_of_range_value_is_refused_at_load_naming_the_key(override, message):
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=[override])
    assert message in str(caught.value)


def test_every_bad_value_is_reported_at_once():
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=["n=-3", "max_pending=0", "report.confidence=2"])
    text = str(caught.value)
    assert "n: must be >= 1" in text and "max_pending: must be >= 1" in text and "report.confidence" in text


def test_keyword_values_are_checked_too():
    with pytest.raises(ConfigError, match="n: must be >= 1"):
        load_config(n=-3)


@pytest.mark.parametrize(
    "override",
    ["sandbox.memory=512m", "sandbox.memory=1.5g", "sandbox.memory=2GB", "sandbox.memory=1073741824",
     "sandbox.network=bridge", "sandbox.network=host", "sandbox.network=none", "sandbox.network=my-net_1.x",
     "sandbox.network=container:sidecar", "report.confidence=0.5", "model.top_p=1", "model.temperature=0",
     "infra_retries=0", "model.retries=0", "model.endpoint=https://api.example.com/v1", "run_id=demo-qwen.1_a"],
)  # fmt: skip
def test_values_in_range_load(override):
    load_config(overrides=[override])


def test_a_network_name_that_may_not_exist_passes_the_load():
    """Existence is the engine's to say: ``bridgee`` fails in the preflight, not here."""
    assert load_config(overrides=["sandbox.network=bridgee"]).sandbox.network == "bridgee"


def test_memory_is_normalised_to_what_the_docker_sdk_parses():
    from docker.utils import parse_bytes

    for raw in ("512M", " 2g ", "1.5G", "2gb", "100000000"):
        normalised = RunConfig.model_validate({"sandbox": {"memory": raw}}).sandbox.memory
        assert parse_bytes(normalised) == memory_bytes(raw)


def test_the_defaults_are_in_range():
    RunConfig.model_validate(RunConfig().model_dump())


@pytest.mark.parametrize(("overrides", "named"), [
    (["agent.time_limit_s=3600"], "agent.time_limit_s (3600)"),
    (["deadline_s=600"], "deadline_s (600)"),
    (["sandbox.setup_timeout_s=900", "model.timeout_s=900"], "sandbox.setup_timeout_s (900)"),
])  # fmt: skip
def test_a_deadline_that_cannot_hold_a_rollout_to_its_time_limit_is_refused_naming_the_fields(overrides, named):
    """A rollout whose agent uses its time limit must end as ``time_limit`` (the model's outcome, counted), not be
    killed at the hard deadline as infrastructure (retried, left out of n, run again on every resume)."""
    with pytest.raises(ConfigError) as caught:
        load_config(overrides=overrides)
    text = str(caught.value)
    assert named in text and "deadline_s" in text and "agent.time_limit_s" in text and "model.timeout_s" in text
    assert "sandbox.setup_timeout_s" in text and text.count("invalid config") == 1


def test_limits_that_just_fit_the_deadline_load():
    config = load_config(overrides=[
        "deadline_s=100", "sandbox.setup_timeout_s=10", "agent.time_limit_s=60", "model.timeout_s=30",
    ])  # fmt: skip
    assert config.deadline_s == 100


def test_a_stored_config_of_another_version_reads_with_every_section_its_model(tmp_path) -> None:
    """A run written by another version: an unknown key is ignored, a missing one takes its default, and a setting
    that no longer validates is kept as stored while its section (and every other) stays a typed model."""
    from agentbon.config import RunConfig, SelectConfig, VerifyConfig
    from agentbon.store import RunStore

    stored = {"n": 3, "retired_setting": 1, "select": {"selectors": ["tests"], "critic": "bygone"},
              "verify": {"timeout_s": -5}}  # fmt: skip
    config = RunConfig.read(stored)
    assert isinstance(config.select, SelectConfig) and isinstance(config.verify, VerifyConfig)
    assert (config.n, config.select.selectors, config.select.critic, config.verify.timeout_s) == (3, ["tests"], "bygone", -5)
    assert config.model.name == RunConfig().model.name and config.select.allow_flags == []
    store = RunStore(tmp_path / "run")
    assert store.config() is None and store.config_data() == {}
    store.create(stored, [])
    assert store.config() == config and store.config_data() == stored
