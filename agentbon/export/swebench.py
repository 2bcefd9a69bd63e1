"""SWE-bench predictions JSONL: the selected candidate per task, and one file per rollout index.

Each line is ``{"instance_id", "model_name_or_path", "model_patch"}``, the format
``python -m swebench.harness.run_evaluation --predictions_path FILE`` reads. Task ids of SWE-bench
suites are the instance ids. A task without a winner gets an empty patch (the harness counts it as
an empty-patch instance); rollouts that are not samples (infra error, cancelled) are left out of
the per-index files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentbon.export.common import as_patch_file, pick_selector, winners
from agentbon.report.data import RunData, is_sample


def model_label(data: RunData, suffix: str) -> str:
    """``model_name_or_path``: the model plus how the patch was chosen, safe as a harness log-directory name."""
    model = str((data.config.get("model") or {}).get("name") or "model")
    return re.sub(r"[^A-Za-z0-9._+-]+", "-", f"{model}+agentbon-{suffix}").strip("-")


def _line(instance_id: str, label: str, patch: str) -> str:
    return json.dumps({"instance_id": instance_id, "model_name_or_path": label, "model_patch": as_patch_file(patch)})


def export_swebench(data: RunData, out_dir: Path, selector: str | None = None) -> dict[str, Path]:
    """Write ``predictions.<selector>.jsonl`` and ``predictions.rollout-<i>.jsonl``; returns them by name."""
    name = pick_selector(data, selector)
    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    label = model_label(data, name)
    selected = out_dir / f"predictions.{re.sub(r'[^A-Za-z0-9._-]+', '-', name)}.jsonl"
    selected.write_text("".join(_line(w.task_id, label, w.patch) + "\n" for w in winners(data, name)))
    files[name] = selected
    by_index: dict[int, list[str]] = {}
    for task_id in data.task_ids:
        for i in range(data.n):
            rollout = data.rollouts.get(f"{task_id}/{i}")
            if rollout is not None and is_sample(rollout):
                by_index.setdefault(i, []).append(_line(task_id, model_label(data, f"rollout{i}"), rollout.patch))
    for i, lines in sorted(by_index.items()):
        path = out_dir / f"predictions.rollout-{i}.jsonl"
        path.write_text("".join(line + "\n" for line in lines))
        files[f"rollout-{i}"] = path
    return files
