"""Preference pairs for DPO / BoNBoN-style training: a passing and a failing candidate of the same task.

Rows are what TRL's ``DPOTrainer`` reads: ``prompt``, ``chosen``, ``rejected`` — conversational
(lists of ``{"role", "content"}`` messages) or plain strings — plus a ``metadata`` column with the
ids and the test evidence of both sides. The completion is the candidate's patch, or its whole
agent trajectory after the prompt. Labels come from the grade (or the selection evidence); only
valid samples with a decided verdict are used; identical patches with opposite labels (a flaky
test) and chosen candidates that carry any flag (docs/security.md, Flags: a policy must not learn
to tamper or forge) are skipped. A flagged rejected candidate is kept and marked in its side's
``flags`` and ``undone`` (``export.flagged: mark``), or left out when its flag is outside
``select.allow_flags`` (``export.flagged: omit``).
"""

from __future__ import annotations

import itertools
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentbon.export.common import flagged_policy
from agentbon.files import write_atomic
from agentbon.report.data import RunData
from agentbon.report.flags import blocking_kinds, rollout_flags, rollout_kinds, undone_paths
from agentbon.store import RunStore
from agentbon.types import Rollout, Verdict, patch_hash

Format = Literal["conversational", "plain"]
Content = Literal["patch", "trajectory"]
MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")


@dataclass
class PairStats:
    pairs: int = 0
    tasks_with_pairs: int = 0
    tasks_without: int = 0
    """Tasks whose candidates all passed or all failed (no pair to make)."""
    skipped: dict[str, int] = field(default_factory=dict)


def _tests(v: Verdict | None) -> list[dict[str, str]]:
    return [{"test": t, "outcome": o} for t, o in sorted(v.tests.items())] if v else []


def _side(r: Rollout, data: RunData) -> dict[str, Any]:
    grade, evidence = data.grades.get(r.rollout_id), data.evidence.get(r.rollout_id)
    return {
        "rollout_id": r.rollout_id,
        "patch_hash": patch_hash(r.patch),
        "grade": grade.status if grade else None,
        "grade_reason": grade.reason if grade else "",
        "grade_tests": _tests(grade),
        "evidence": evidence.status if evidence else None,
        "evidence_reason": evidence.reason if evidence else "",
        "evidence_tests": _tests(evidence),
        "tampered": list(grade.tampered) if grade else [],
        "flags": [
            {"kind": f.kind, "detail": f.detail, "paths": list(f.paths)} for f in rollout_flags(data, r.rollout_id)
        ],
        "undone": undone_paths(data, r.rollout_id),
    }


def _messages(store: RunStore, rollout_id: str) -> tuple[list[dict], list[dict]]:
    """A trajectory split into the prompt (up to the first assistant turn) and the completion."""
    clean = [{k: m[k] for k in MESSAGE_KEYS if k in m} for m in store.trajectory(rollout_id)]
    first = next((i for i, m in enumerate(clean) if m.get("role") == "assistant"), len(clean))
    return clean[:first], clean[first:]


def _render(messages: list[dict]) -> str:
    return "\n\n".join(f"{m['role']}: {m.get('content') or ''}" for m in messages)


def _row(
    store: RunStore, data: RunData, good: Rollout, bad: Rollout, fmt: Format, content: Content, label: str
) -> dict[str, Any] | None:
    task = data.tasks.get(good.task_id)
    if content == "trajectory":
        prompt, chosen = _messages(store, good.rollout_id)
        other_prompt, rejected = _messages(store, bad.rollout_id)
        if not prompt or not chosen or not rejected or prompt != other_prompt:
            return None  # a DPO pair needs one shared prompt and two completions
    else:
        text = task.problem_statement if task else good.task_id
        prompt = [{"role": "user", "content": text}]
        chosen = [{"role": "assistant", "content": good.patch}]
        rejected = [{"role": "assistant", "content": bad.patch}]
    row: dict[str, Any] = {"prompt": prompt, "chosen": chosen, "rejected": rejected}
    if fmt == "plain":
        plain_prompt = _render(prompt) if content == "trajectory" else prompt[0]["content"]
        row = {"prompt": plain_prompt, "chosen": _render(chosen) if content == "trajectory" else good.patch,
               "rejected": _render(rejected) if content == "trajectory" else bad.patch}  # fmt: skip
    row["metadata"] = {
        "run_id": data.run_id, "task_id": good.task_id, "label": label, "content": content,
        "chosen": _side(good, data), "rejected": _side(bad, data),
    }  # fmt: skip
    return row


def export_pairs(
    store: RunStore,
    data: RunData,
    out: Path,
    fmt: Format = "conversational",
    content: Content = "patch",
    label: Literal["grade", "evidence"] = "grade",
    max_per_task: int = 8,
    seed: int = 0,
    flagged: str | None = None,
) -> PairStats:
    """Write one JSON line per (passing, failing) pair; at most ``max_per_task`` per task, sampled with ``seed``.

    ``flagged`` (``mark``/``omit``) overrides the run's ``export.flagged`` for rejected candidates.
    """
    verdicts = data.grades if label == "grade" else data.evidence
    omit = flagged_policy(data, flagged) == "omit"
    stats, rng, lines = PairStats(), random.Random(seed), []

    def skip(why: str) -> None:
        stats.skipped[why] = stats.skipped.get(why, 0) + 1

    for task_id in data.task_ids:
        passed: list[Rollout] = []
        failed: list[Rollout] = []
        seen: set[tuple[str, str]] = set()
        for i in range(data.n):
            r = data.rollouts.get(f"{task_id}/{i}")
            v = verdicts.get(f"{task_id}/{i}")
            if r is None or not r.finished or v is None or not v.decided:
                continue
            key = (patch_hash(r.patch), v.status)
            if key in seen:
                continue  # the same patch twice teaches nothing new
            seen.add(key)
            kinds = rollout_kinds(data, r.rollout_id)
            if v.status == "pass" and kinds:
                skip(f"chosen flagged ({', '.join(kinds)})")
            elif v.status == "fail" and omit and blocking_kinds(data, r.rollout_id):
                skip(f"rejected flagged ({', '.join(blocking_kinds(data, r.rollout_id))}; export.flagged: omit)")
            elif v.status == "pass" and not r.patch.strip():
                skip("chosen has an empty patch")
            else:
                (passed if v.status == "pass" else failed).append(r)
        combos = [(g, b) for g, b in itertools.product(passed, failed)]
        rng.shuffle(combos)
        made = 0
        for good, bad in combos:
            if made >= max_per_task:
                break
            if patch_hash(good.patch) == patch_hash(bad.patch):
                skip("same patch, opposite labels (flaky)")
                continue
            row = _row(store, data, good, bad, fmt, content, label)
            if row is None:
                skip("trajectories without a shared prompt")
                continue
            lines.append(json.dumps(row))
            made += 1
        stats.pairs += made
        stats.tasks_with_pairs += made > 0
        stats.tasks_without += made == 0
    out.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out, "".join(line + "\n" for line in lines))
    return stats
