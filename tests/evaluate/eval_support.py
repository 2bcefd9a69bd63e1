"""Helpers for eval tests: predictions files and patches that the fake verifier passes or fails."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "orchestrate"))

MODEL = "some-model"


def patch(text: str, name: str = "README.md") -> str:
    """A diff adding one line (``FIX`` in it: the fake verifier passes it)."""
    return f"diff --git a/{name} b/{name}\n--- a/{name}\n+++ b/{name}\n@@ -1 +1,2 @@\n hello\n+{text}\n"


def pred(instance_id: str, model_patch: str | None, model: str = MODEL) -> dict:
    return {"instance_id": instance_id, "model_name_or_path": model, "model_patch": model_patch}


def write_jsonl(path: Path, entries: list) -> Path:
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in entries))
    return path
