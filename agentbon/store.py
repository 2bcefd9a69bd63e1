"""The run store: an append-only, resumable run directory (docs/architecture.md, "Records and the run store").

Layout of ``runs/<run_id>/``::

    config.yaml                  the resolved config
    events.jsonl                 append-only event log, one JSON object a line, flushed per record
    tasks.jsonl                  every task definition the run has seen (gold patches stripped)
    <task_id>/<i>/rollout.json   the Rollout record
    <task_id>/<i>/patch.diff     the candidate patch
    <task_id>/<i>/trajectory.jsonl   OpenAI-format messages, one a line, each with ``extra``
    <task_id>/<i>/verdict.<role>.json
    <task_id>/<i>/logs/          tracebacks of failed attempts (infra retries)
    summary.json, report.md, report.html

The event log is the source of truth; per-rollout folders are conveniences written before the
event that records them. A torn last line of any JSONL here (the driver killed mid-write) is ignored on reading and
cut off on the next append, so a resumed run never records a rollout twice; every other file is replaced whole
(written to a temporary name and renamed: agentbon/files.py). The run's tasks are those of its
latest invocation (a ``tasks`` event names them whenever they change): a resume without some tasks leaves their
records in place, out of the report, and one with them brings them back.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import yaml

from agentbon.config import RunConfig
from agentbon.errors import ConfigError
from agentbon.files import append_jsonl, read_jsonl, write_atomic
from agentbon.types import Rollout, Selection, Task, Verdict

if TYPE_CHECKING:
    from agentbon.orchestrate.events import Event, PrepareFailed, SelectorError

E = TypeVar("E", bound="Event")

EVENTS = "events.jsonl"
TASKS = "tasks.jsonl"
TASK_SET = "tasks"
"""The event naming the run's tasks (``task_ids``), appended by ``create`` whenever they change."""


class RunStore:
    """Reads and appends one run directory."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.run_id = self.path.name

    # ---------------------------------------------------------------- writing
    def create(self, config: dict[str, Any], tasks: list[Task], replace: set[str] | None = None) -> None:
        """Write the config and the task snapshot (kept on resume; new tasks, and those in ``replace``, appended), and
        make ``tasks`` the run's tasks."""
        self.path.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path / "config.yaml", yaml.safe_dump(config, sort_keys=False))
        known = {t.task_id for t in self.definitions()} - (replace or set())
        append_jsonl(self.path / TASKS, (
            t.model_copy(update={"gold_patch": None}).model_dump_json() for t in tasks if t.task_id not in known
        ))  # fmt: skip
        ids = [t.task_id for t in tasks]
        if ids != self.current_task_ids():
            self.append(TASK_SET, task_ids=ids)

    def append(self, kind: str, record: Any = None, **fields: Any) -> None:
        """Append one event and flush it to disk."""
        self.path.mkdir(parents=True, exist_ok=True)
        event: dict[str, Any] = {"type": kind, "ts": time.time(), **fields}
        if record is not None:
            event["record"] = record.model_dump(mode="json") if hasattr(record, "model_dump") else record
        append_jsonl(self.path / EVENTS, [json.dumps(event)])

    def rollout_dir(self, rollout_id: str) -> Path:
        d = self.path / rollout_id
        d.mkdir(parents=True, exist_ok=True)
        return d

    def save_rollout(self, rollout: Rollout, messages: list[dict[str, Any]] | None = None) -> None:
        """Write the rollout's folder, then record it in the event log."""
        d = self.rollout_dir(rollout.rollout_id)
        write_atomic(d / "patch.diff", rollout.patch)
        if messages is not None:
            write_atomic(d / "trajectory.jsonl", "".join(json.dumps(m) + "\n" for m in messages))
        write_atomic(d / "rollout.json", rollout.model_dump_json(indent=1))
        self.append("rollout", rollout)

    def save_verdict(self, verdict: Verdict) -> None:
        d = self.rollout_dir(verdict.rollout_id)
        write_atomic(d / f"verdict.{verdict.role}.json", verdict.model_dump_json(indent=1))
        self.append("verdict", verdict)

    def save_selection(self, selection: Selection) -> None:
        self.append("selection", selection)

    def save_log(self, rollout_id: str, name: str, text: str) -> Path:
        """Write a log file under the rollout's ``logs/`` folder (tracebacks of failed attempts)."""
        d = self.rollout_dir(rollout_id) / "logs"
        d.mkdir(exist_ok=True)
        return write_atomic(d / name, text)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the run directory for one driver; a second driver on the same run fails at once.

        An OS lock: a driver killed with ``kill -9`` releases it, so the run can be resumed right away.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / ".lock", "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                f.seek(0)
                holder = f.read().strip() or "?"
                raise ConfigError(f"{self.path}: run in use by another agentbon process (pid {holder})") from None
            f.seek(0)
            f.truncate()
            f.write(str(os.getpid()))
            f.flush()
            try:
                yield
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)

    # ---------------------------------------------------------------- reading
    def events(self, *kinds: str) -> Iterator[dict[str, Any]]:
        """Every complete event in order (a torn last line is skipped); only those of ``kinds`` when given, parsing
        only their lines (``append`` writes the type first), so a check reads a log of millions of rollouts fast."""
        heads = tuple(json.dumps({"type": kind})[:-1] + "," for kind in kinds) or ("",)
        yield from read_jsonl(self.path / EVENTS, heads)

    def recorded(self, event: type[E]) -> list[E]:
        """Every complete event of one class (``Infra``, ``EarlyStop``, ``LauncherChosen``...), typed, in order.

        Read leniently (``Event.read``): keys a line has that the class does not know are ignored, and a line whose
        fields do not validate as the class (written by a version whose event lacked a field now required) is left
        out rather than failing the read."""
        return [e for line in self.events(event.kind) if (e := event.read(line)) is not None]

    def rollout_counts(self) -> dict[str, int]:
        """How many final (non-infra) rollout records each rollout id has: more than 1 is a duplicate."""
        counts: dict[str, int] = {}
        for e in self.events("rollout"):
            rollout = Rollout.model_validate(e["record"])
            if rollout.finished:
                counts[rollout.rollout_id] = counts.get(rollout.rollout_id, 0) + 1
        return counts

    def current_task_ids(self) -> list[str] | None:
        """The ids of the run's tasks, as its latest invocation named them; None for a run of a version that did not
        record them (its tasks are every one it stored)."""
        latest = deque(self.events(TASK_SET), maxlen=1)
        return list(latest[0]["task_ids"]) if latest else None

    def tasks(self) -> list[Task]:
        """The run's tasks (its latest invocation's, in their order), each in its latest definition."""
        definitions = {t.task_id: t for t in self.definitions()}
        ids = self.current_task_ids()
        return list(definitions.values()) if ids is None else [definitions[i] for i in ids if i in definitions]

    def definitions(self) -> list[Task]:
        """Every task the run has stored, those no longer in its suite too; a task redefined on a resume
        (``accept_task_changes``) reads as its latest definition."""
        latest: dict[str, Task] = {}
        for data in read_jsonl(self.path / TASKS):
            task = Task.model_validate(data)
            latest[task.task_id] = task
        return list(latest.values())

    def rollouts(self) -> dict[str, Rollout]:
        """The latest record of each rollout by id (a retried rollout keeps its last attempt)."""
        out: dict[str, Rollout] = {}
        for e in self.events():
            if e["type"] == "rollout":
                r = Rollout.model_validate(e["record"])
                out[r.rollout_id] = r
        return out

    def verdicts(self, role: str) -> dict[str, Verdict]:
        """The latest verdict of each rollout in ``role``."""
        out: dict[str, Verdict] = {}
        for e in self.events():
            if e["type"] == "verdict" and e["record"]["role"] == role:
                v = Verdict.model_validate(e["record"])
                out[v.rollout_id] = v
        return out

    def selections(self) -> list[Selection]:
        """The latest selection per (task, selector)."""
        out: dict[tuple[str, str], Selection] = {}
        for e in self.events():
            if e["type"] == "selection":
                s = Selection.model_validate(e["record"])
                out[(s.task_id, s.selector)] = s
        return list(out.values())

    def standing_selections(self) -> list[Selection]:
        """The latest selection per (task, selector), less those a later infrastructure failure replaced
        (:meth:`selector_failures`): what every figure and export reads (docs/failure-taxonomy.md, "Selection")."""
        failed = self.selector_failures()
        return [s for s in self.selections() if (s.task_id, s.selector) not in failed]

    def selector_failures(self) -> dict[tuple[str, str], SelectorError]:
        """(task, selector) → its ``selector_error`` event, where the latest selection of that task by that selector
        failed on infrastructure: the task is out of that selector's figures until a selection replaces it."""
        from agentbon.orchestrate.events import SelectorError  # the events import the store

        if next(self.events("selector_error"), None) is None:
            return {}
        out: dict[tuple[str, str], SelectorError] = {}
        for e in self.events("selection", "selector_error"):
            if e["type"] == "selection":
                out.pop((e["record"]["task_id"], e["record"]["selector"]), None)
            elif (failure := SelectorError.read(e)) is None:
                continue
            elif failure.infra:
                out[(failure.task_id, failure.selector)] = failure
            else:
                out.pop((failure.task_id, failure.selector), None)
        return out

    def prepare_failures(self) -> dict[str, PrepareFailed]:
        """Task id → its ``prepare_failed`` event, where the latest preparation of the task failed and no rollout of
        it was recorded since (a resume that prepared it records its rollouts)."""
        from agentbon.orchestrate.events import PrepareFailed  # the events import the store

        if next(self.events("prepare_failed"), None) is None:
            return {}
        out: dict[str, PrepareFailed] = {}
        for e in self.events("prepare_failed", "rollout"):
            if e["type"] == "prepare_failed":
                if (failure := PrepareFailed.read(e)) is not None:
                    out[failure.task_id] = failure
            else:
                out.pop(e["record"]["task_id"], None)
        return out

    def trajectory(self, rollout_id: str) -> list[dict[str, Any]]:
        return list(read_jsonl(self.path / rollout_id / "trajectory.jsonl"))

    def config(self) -> RunConfig | None:
        """The run's settings as its latest invocation recorded them, read leniently for a run of another version
        (``RunConfig.read``); None before its first driver wrote them."""
        data = self.config_data()
        return RunConfig.read(data) if data else None

    def config_data(self) -> dict[str, Any]:
        """``config.yaml`` as written (what a resume compares its settings with, key by key); empty when absent."""
        p = self.path / "config.yaml"
        return (yaml.safe_load(p.read_text()) or {}) if p.exists() else {}
