"""Resume identity: which run a command finds, and what a resume must keep so that its report never mixes regimes.

Rules (docs/failure-taxonomy.md, "Resume"): the default run id names the suite (its task ids, not its file name or
path: a renamed suite is the same suite, two suites that share a file name are not) and the settings that shape the
rollouts (``SEMANTIC``) or the sample the curves use (``CURVE``); a resume refuses a change to any of those,
naming each with both values; a task redefined since the run started is refused unless ``accept_task_changes``;
a task left out of the suite leaves the report (its records stay); under a batch budget the task set is fixed.
A setting a run of an older version did not record reads as its default.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentbon.config import AgentConfig, RunConfig, VerifyConfig
from agentbon.errors import ConfigError
from agentbon.store import RunStore
from agentbon.types import Task


def _leaves(section: str, model: type[BaseModel], skip: tuple[str, ...] = ()) -> tuple[str, ...]:
    return tuple(f"{section}.{name}" for name in model.model_fields if name not in skip)


SEMANTIC = (
    "model.name", "model.temperature", "model.top_p", "model.top_k", "model.max_tokens", "model.seed",
    *_leaves("agent", AgentConfig, skip=("prompts_dir",)),
)  # fmt: skip
"""Settings that change what a rollout produces. A custom prompts folder counts by its contents
(``agent.prompts_digest``), not by where it is."""
CURVE = (
    "early_stop", "early_stop_fixed", "budget", "budget_first", "budget_tokens",
    *_leaves("verify", VerifyConfig, skip=("concurrency",)),
)  # fmt: skip
"""Settings that change which rollouts the curves use or how a rollout is graded (docs/estimators.md): a report over
rollouts drawn or graded under two of them would mix regimes. Every verification setting but how many run at once."""
READ_AT_LOAD = {
    "agent.prompts_digest": "agent.prompts_digest is the digest of agent.prompts_dir's templates: to resume the run, "
    "give it the templates it was started with",
}
"""Kept settings the config computes at load, with what puts the recorded value back."""
KEPT = SEMANTIC + CURVE
"""What a resumed run must keep (everything else may change: N, concurrency, retries, the report's settings)."""

_MISSING = object()


def _get(data: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return _MISSING
        data = data[part]
    return data


@functools.cache
def _defaults() -> dict[str, Any]:
    return RunConfig().model_dump(mode="json")


def _value(config: dict[str, Any], dotted: str) -> Any:
    """A setting of a config as stored; one an older version did not have reads as its default."""
    value = _get(config, dotted)
    return _get(_defaults(), dotted) if value is _MISSING else value


def suite_digest(tasks: list[Task]) -> str:
    """A hash of the suite's task ids (in no order): the suite's identity in a default run id."""
    return hashlib.sha256("\n".join(sorted(t.task_id for t in tasks)).encode()).hexdigest()


def run_name(text: str, limit: int | None = None) -> str:
    """``text`` as a run id's name part (or a folder's): letters, digits and ``._-``, cut to ``limit`` characters."""
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:limit]


def default_run_id(suite: str, config: RunConfig, tasks: list[Task]) -> str:
    """``<suite file's stem>-<model>-<hash of the suite's tasks and the kept settings>``: the same command finds the
    same run again. Only settings away from their defaults are hashed, so that a setting a later version adds does
    not rename every run."""
    now = config.model_dump(mode="json")
    kept = {k: _get(now, k) for k in KEPT if _get(now, k) != _get(_defaults(), k)}
    digest = hashlib.sha256(json.dumps([suite_digest(tasks), kept], sort_keys=True).encode()).hexdigest()
    return f"{run_name(f'{Path(suite).stem}-{config.model.name}')}-{digest[:8]}"


def _older_run_id(suite: str, config: RunConfig) -> str:
    """The default run id of agentbon before the suite's tasks were part of it: to find its runs again."""
    data = config.model_dump(mode="json")
    data["agent"].pop("prompts_digest", None)  # added since: not in what that version hashed
    old = ("model.name", "model.temperature", "model.top_p", "model.top_k", "model.max_tokens", "model.seed", "agent")
    digest = hashlib.sha256(json.dumps([_get(data, k) for k in old], sort_keys=True).encode()).hexdigest()
    return f"{run_name(f'{Path(suite).stem}-{config.model.name}')}-{digest[:8]}"


def earlier_run(run_dir: str | Path, new: str, older: str, tasks: list[Task]) -> str:
    """``older`` where a run of an older version is there under that id holding exactly ``tasks``, as they are defined
    now, and nothing is under ``new`` yet (so the same command resumes it after an upgrade); else ``new``."""
    root = Path(run_dir)
    if (root / new).exists() or not (root / older / "config.yaml").exists():
        return new
    store = RunStore(root / older)
    held = store.tasks() if store.current_task_ids() is None else []
    same = {t.task_id for t in held} == {t.task_id for t in tasks} and not task_changes(held, tasks)
    return older if same else new


def resolve_run_id(suite: str, config: RunConfig, tasks: list[Task]) -> str:
    """The run a command means: ``run_id`` when given, else the default (or the run an older version made for it)."""
    if config.run_id:
        return config.run_id
    return earlier_run(config.run_dir, default_run_id(suite, config, tasks), _older_run_id(suite, config), tasks)


def setting_changes(stored: dict[str, Any], config: RunConfig) -> list[tuple[str, Any, Any]]:
    """``(setting, recorded, now)`` for each kept setting whose value differs from the run's recorded one."""
    now = config.model_dump(mode="json")
    return [(k, _value(stored, k), _get(now, k)) for k in KEPT if _value(stored, k) != _get(now, k)]


def check_resumable(store: RunStore, config: RunConfig) -> None:
    """Refuse to resume a run with settings that would make its rollouts or its curves' sample incomparable."""
    before = store.config_data()
    changed = setting_changes(before, config) if before else []
    if not changed:
        return
    diffs = ", ".join(f"{k}: {old!r} -> {new!r}" for k, old, new in changed)
    # Scalar settings can be put back on the command line (a list cannot, in one flag; a digest is read at load).
    scalars = {k: old for k, old, _ in changed if not isinstance(old, dict | list) and k not in READ_AT_LOAD}
    back = " ".join(f"-c {k}={'null' if v is None else v}" for k, v in scalars.items())
    hint = f"to resume it, pass {back}; " if len(scalars) == len(changed) else ""
    hint += "".join(f"{READ_AT_LOAD[k]}; " for k, _, _ in changed if k in READ_AT_LOAD)
    raise ConfigError(
        f"{store.path}: cannot resume with different settings ({diffs}): its rollouts and verdicts were made with the "
        f"recorded ones, and one report over both would mix them; {hint}or use another --run-id"
    )


TASK_FIELDS = (
    "kind", "problem_statement", "repo.base_commit", "environment", "evidence", "grade", "evidence_is_grade", "hints",
)  # fmt: skip
"""Fields that define what a task asks and how it is graded: a resumed run must see them unchanged. Not compared:
where the repository is read from (``repo.url``: a suite may move), the source file, the gold patch, labels."""


def task_changes(stored: list[Task], now: list[Task]) -> dict[str, list[str]]:
    """The fields of each task (by id) whose definition differs from the one stored with the run."""
    before = {t.task_id: t.model_dump(mode="json") for t in stored}
    changed: dict[str, list[str]] = {}
    for task in now:
        old = before.get(task.task_id)
        if old is None:
            continue  # a new task: added to the run
        new = task.model_dump(mode="json")
        fields = [f for f in TASK_FIELDS if _get(old, f) != _get(new, f)]
        if fields:
            changed[task.task_id] = fields
    return changed


@dataclass
class TaskChanges:
    """How a resume's tasks differ from the run's: redefined (by field), added, and dropped (left out of the report)."""

    redefined: dict[str, list[str]] = field(default_factory=dict)
    added: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)


def _listed(ids: list[str], limit: int = 10) -> str:
    return ", ".join(ids[:limit]) + (f" (and {len(ids) - limit} more)" if len(ids) > limit else "")


def check_task_changes(store: RunStore, tasks: list[Task], config: RunConfig) -> TaskChanges:
    """Refuse a resume whose tasks were redefined (``accept_task_changes`` lets it through), or whose task set differs
    under a batch budget; return how the tasks differ."""
    current = store.tasks()
    if not current:  # a new run
        return TaskChanges()
    ids, now = [t.task_id for t in current], {t.task_id for t in tasks}
    changes = TaskChanges(
        redefined=task_changes(store.definitions(), tasks),
        added=[t.task_id for t in tasks if t.task_id not in set(ids)],
        dropped=[t for t in ids if t not in now],
    )
    if changes.redefined and not config.accept_task_changes:
        listed = "; ".join(f"{tid}: {', '.join(fields)}" for tid, fields in sorted(changes.redefined.items())[:10])
        more = f" (and {len(changes.redefined) - 10} more)" if len(changes.redefined) > 10 else ""
        raise ConfigError(
            f"{store.path}: {len(changes.redefined)} task(s) differ from the definitions this run was started with "
            f"({listed}{more}); their stored rollouts would be mixed with rollouts of the new definitions. Use another "
            "--run-id, or pass --accept-task-changes to resume anyway"
        )
    if config.budget and (changes.added or changes.dropped):
        sets = (("added", changes.added), ("dropped", changes.dropped))
        differ = "; ".join(f"{what}: {_listed(ids)}" for what, ids in sets if ids)
        raise ConfigError(
            f"{store.path}: a batch budget is given out over the run's tasks, and this resume's differ ({differ}): "
            "the allocations would mix two batches. Resume with the run's tasks, or use another --run-id"
        )
    return changes
