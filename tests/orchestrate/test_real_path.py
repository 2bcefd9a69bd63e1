"""The real path: Docker sandboxes, the bash (and mini) agent, the test verifier, the selectors and the report, on demo
tasks, with only the model scripted (the one factory seam). Markers: docker, ray."""

from __future__ import annotations

import functools
import uuid
from pathlib import Path

import pytest

from agentbon.agent import SUBMIT_COMMAND
from agentbon.config import load_config
from agentbon.orchestrate import Factories, run_batch
from agentbon.store import RunStore
from agentbon.tasks import load_suite
from agentbon.testing import FakeService, task_model

pytestmark = [pytest.mark.docker, pytest.mark.ray, pytest.mark.usefixtures("ray_session")]
DEMO = Path(__file__).resolve().parents[2] / "tasks" / "demo"


def bash(command: str) -> str:
    return f"THOUGHT: next.\n\n```bash\n{command}\n```\n"


@pytest.fixture(scope="module")
def engine():
    from agentbon.sandbox import docker_client

    try:
        return docker_client(timeout=10)
    except Exception as e:  # noqa: BLE001
        pytest.skip(f"no Docker engine: {e}")


def test_real_components_end_to_end(tmp_path: Path, engine) -> None:
    migration, _ = load_suite(DEMO / "demo-migrate-dateparse")
    bugfix, _ = load_suite(DEMO / "demo-b-paginate")
    tasks = migration + bugfix
    fix = f"git apply <<'AGENTBON_EOF'\n{migration[0].gold_patch}\nAGENTBON_EOF"
    model = functools.partial(
        task_model, table={"dateparse": [bash(fix), bash(SUBMIT_COMMAND)]}, default=[bash(SUBMIT_COMMAND)]
    )
    factories = Factories(model=model, server=FakeService)
    run_id = f"real-{uuid.uuid4().hex[:8]}"
    cfg = load_config(overrides=[f"run_dir={tmp_path}", "agent.type=bash", "model.name=scripted"], n=2, run_id=run_id)
    result = run_batch(tasks, cfg, factories=factories)
    store = RunStore(result.path)
    rollouts = store.rollouts()
    grade = store.verdicts("grade")
    mig = [r for r in rollouts.values() if r.task_id == "demo-migrate-dateparse"]
    assert mig and all(r.status == "submitted" for r in mig)
    assert any(grade[r.rollout_id].status == "pass" for r in mig)
    assert {grade[f"demo-b-paginate/{i}"].status for i in range(2)} == {"fail"}
    assert rollouts["demo-b-paginate/0"].isolation == "docker"
    selected = {(s.task_id, s.selector): s.winner for s in store.selections()}
    assert selected[("demo-migrate-dateparse", "tests-then-critic")] in {r.rollout_id for r in mig}
    assert selected[("demo-migrate-dateparse", "oracle")] is not None
    assert result.report is not None and (result.path / "summary.json").exists() and (result.path / "report.md").exists()
    leftovers = engine.containers.list(all=True, filters={"label": f"agentbon.run={run_id}"})
    assert [c for c in leftovers if c.labels.get("agentbon.run") == run_id] == []


def test_mini_agent_end_to_end(tmp_path: Path, engine) -> None:
    """agent.type=mini through the batch: its rollouts are recorded, verified and graded like the bash agent's."""
    pytest.importorskip("minisweagent", reason="the mini extra: pip install 'agentbon[mini]'")
    tasks, _ = load_suite(DEMO / "demo-migrate-dateparse")
    fix = f"git apply <<'AGENTBON_EOF'\n{tasks[0].gold_patch}\nAGENTBON_EOF"
    replies = [
        f"Apply it.\n\n```mswea_bash_command\n{c}\n```\n" for c in (fix, "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT")
    ]
    model = functools.partial(task_model, table={}, default=replies)
    run_id = f"mini-{uuid.uuid4().hex[:8]}"
    overrides = [f"run_dir={tmp_path}", "agent.type=mini", "model.name=scripted"]
    result = run_batch(
        tasks,
        load_config(overrides=overrides, n=2, run_id=run_id),
        factories=Factories(model=model, server=FakeService),
    )
    store = RunStore(result.path)
    rollouts = store.rollouts()
    grade = store.verdicts("grade")
    assert sorted(rollouts) == [f"demo-migrate-dateparse/{i}" for i in range(2)]
    for rid, r in rollouts.items():
        assert (r.status, r.exit_status, r.steps, r.usage.calls) == ("submitted", "Submitted", 2, 2)
        assert grade[rid].status == "pass"
        messages = store.trajectory(rid)
        recorded = [m["extra"]["usage"] for m in messages if m["role"] == "assistant"]
        assert (
            sum(u["prompt_tokens"] + u["completion_tokens"] for u in recorded)
            == (r.usage.prompt_tokens + r.usage.completion_tokens)
            > 0
        )
        assert messages[-1]["extra"]["exit_status"] == "Submitted"


def test_command_agent_end_to_end(tmp_path: Path, engine) -> None:
    """agent.type=command through the batch (preflight, workers, verifier): a stdlib program in the mounted folder
    asks the model once and runs its reply; its rollouts are recorded and graded like the built-in agents'."""
    tasks, _ = load_suite(DEMO / "demo-migrate-dateparse")
    fix = f"git apply <<'AGENTBON_EOF'\n{tasks[0].gold_patch}\nAGENTBON_EOF"
    model = functools.partial(task_model, table={}, default=[fix])
    program = Path(__file__).resolve().parents[1] / "agent" / "command_program"
    overrides = [
        f"run_dir={tmp_path}", "agent.type=command", "model.name=scripted", f"agent.command_mount={program}",
        "agent.command=python3 $AGENTBON_AGENT_DIR/stdlib_agent.py",
    ]  # fmt: skip
    config = load_config(overrides=overrides, n=2, run_id=f"command-{uuid.uuid4().hex[:8]}")
    result = run_batch(tasks, config, factories=Factories(model=model, server=FakeService))
    store = RunStore(result.path)
    rollouts = store.rollouts()
    grade = store.verdicts("grade")
    assert sorted(rollouts) == [f"demo-migrate-dateparse/{i}" for i in range(2)]
    for rid, r in rollouts.items():
        assert (r.status, r.exit_status, r.steps, r.usage.calls) == ("submitted", "Submitted", 1, 1)
        assert r.usage.prompt_tokens > 0 and grade[rid].status == "pass"
        messages = store.trajectory(rid)
        assert [m["extra"]["kind"] for m in messages if m["role"] != "assistant"] == ["instance", "program_exit"]
        assert messages[-1]["extra"]["exit_code"] == 0
