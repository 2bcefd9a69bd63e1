"""SWE-bench predictions JSONL: the selected candidate per task, and one file per rollout index.

Each line is ``{"instance_id", "model_name_or_path", "model_patch"}``, the format
``python -m swebench.harness.run_evaluation --predictions_path FILE`` reads. Task ids of SWE-bench
suites are the instance ids. A task without a winner gets an empty patch (the harness counts it as
an empty-patch instance), unless its selection failed on infrastructure: then it has no line (the harness
counts it as not submitted) until a resume selects it. Rollouts that are not samples (infra error,
cancelled) are left out of the per-index files.

A flagged candidate (docs/security.md, Flags) gets two more keys, which the harness ignores:
``agentbon_flags`` (kind, detail, paths of each flag) and ``agentbon_undone`` (files whose changes
grading undid before the tests ran; the patch still holds them). With ``export.flagged: omit`` a
candidate with a flag outside ``select.allow_flags`` ships an empty ``model_patch`` instead (the
harness counts it as unresolved) and keeps the two keys, so the line says why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from agentbon.export.common import as_patch_file, flag_fields, flagged_policy, pick_selector, winners
from agentbon.files import write_atomic
from agentbon.report.data import RunData
from agentbon.report.flags import blocking_kinds, rollout_flags, undone_paths
from agentbon.types import Flag


def model_label(data: RunData, suffix: str) -> str:
    """``model_name_or_path``: the model plus how the patch was chosen, safe as a harness log-directory name."""
    model = data.config.model.name or "model"
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", f"{model}+agentbon-{suffix}").strip("-")


def _line(
    instance_id: str, label: str, patch: str, flags: Sequence[Flag] = (), undone: Sequence[str] = (), omit: bool = False
) -> str:
    line = {
        "instance_id": instance_id,
        "model_name_or_path": label,
        "model_patch": "" if omit else as_patch_file(patch),
    }
    return json.dumps({**line, **flag_fields(list(flags), list(undone))})


def export_swebench(
    data: RunData, out_dir: Path, selector: str | None = None, flagged: str | None = None
) -> dict[str, Path]:
    """Write ``predictions.<selector>.jsonl`` and ``predictions.rollout-<i>.jsonl``; returns them by name.

    ``flagged`` (``mark``/``omit``) overrides the run's ``export.flagged``.
    """
    name = pick_selector(data, selector)
    omit = flagged_policy(data, flagged) == "omit"
    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    label = model_label(data, name)
    selected = out_dir / f"predictions.{re.sub(r'[^A-Za-z0-9._-]+', '-', name)}.jsonl"
    lines = [
        _line(w.task_id, label, w.patch, w.flags, w.undone, omit and bool(w.blocking))
        for w in winners(data, name)
        if not w.left_out
    ]
    write_atomic(selected, "".join(line + "\n" for line in lines))
    files[name] = selected
    by_index: dict[int, list[str]] = {}
    for task_id in data.task_ids:
        for i in range(data.n):
            rollout = data.rollouts.get(f"{task_id}/{i}")
            if rollout is not None and rollout.finished:
                rid, label_i = rollout.rollout_id, model_label(data, f"rollout{i}")
                drop = omit and bool(blocking_kinds(data, rid))
                line = _line(task_id, label_i, rollout.patch, rollout_flags(data, rid), undone_paths(data, rid), drop)
                by_index.setdefault(i, []).append(line)
    for i, lines in sorted(by_index.items()):
        path = out_dir / f"predictions.rollout-{i}.jsonl"
        write_atomic(path, "".join(line + "\n" for line in lines))
        files[f"rollout-{i}"] = path
    return files
