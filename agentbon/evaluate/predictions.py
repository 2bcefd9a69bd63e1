"""Predictions files as the SWE-bench harness reads them: a JSON list, a JSON object keyed by id, or JSONL.

Each prediction is ``{"instance_id", "model_name_or_path", "model_patch"}`` (other keys are ignored, as the
harness does). A malformed entry is an ``InputError`` naming the file, the line (or entry) and the key; the
other entries are still read. A file that cannot be read at all (missing, not UTF-8, broken JSON document)
raises ``PredictionsFileError``: nothing is graded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from agentbon.errors import ConfigError

KEYS = ("instance_id", "model_name_or_path", "model_patch")
"""The keys every prediction has (``model_patch`` may be null or empty: an empty-patch instance)."""


class PredictionsFileError(ConfigError):
    """The predictions file cannot be read as a whole (nothing is graded)."""


class Prediction(BaseModel):
    """One prediction: the patch a model proposed for one instance (task)."""

    instance_id: str
    """The task id (SWE-bench instance id) the patch is for."""
    model_name_or_path: str
    """The model that produced it, as the harness names it."""
    model_patch: str
    """The patch (a unified diff); empty when the model proposed nothing (``null`` reads as empty)."""
    line: int
    """Where it is in the file: the line its entry starts on (1-based)."""

    @property
    def empty(self) -> bool:
        """No patch at all (``""`` or ``null``): the harness's empty-patch instance, not graded."""
        return self.model_patch == ""

    @property
    def blank(self) -> bool:
        """Whitespace only: the harness tries to apply it, every way fails, and it is an error instance."""
        return not self.empty and not self.model_patch.strip()


class InputError(BaseModel):
    """One entry that cannot be graded: which file, line and key, and what is wrong."""

    file: str
    line: int | None = None
    """The line the entry starts on; None for the file as a whole."""
    key: str = ""
    """The key at fault (empty: the entry itself)."""
    problem: str
    instance_id: str | None = None
    """The entry's instance id where it has one."""

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.key}: {self.problem}" if self.key else f"{where}: {self.problem}"


def read_predictions(path: str | Path) -> tuple[list[Prediction], list[InputError]]:
    """Every well-formed prediction in the file, in file order, and an error per malformed entry."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PredictionsFileError(f"{path}: no such predictions file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise PredictionsFileError(f"{path}: cannot read the predictions file: {e}") from e
    predictions: list[Prediction] = []
    errors: list[InputError] = []
    for line, entry in _entries(path, text, errors):
        made = _prediction(str(path), line, entry)
        if isinstance(made, InputError):
            errors.append(made)
        else:
            predictions.append(made)
    if not predictions and not errors:
        raise PredictionsFileError(f"{path}: the file holds no predictions")
    return predictions, errors


def _entries(path: Path, text: str, errors: list[InputError]) -> Iterator[tuple[int, Any]]:
    """(line, decoded entry) of each entry: JSON list, JSON object of predictions, or one JSON value a line."""
    stripped = text.lstrip()
    if stripped.startswith("["):
        yield from _json_list(path, text)
        return
    if stripped.startswith("{") and path.suffix != ".jsonl":
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None  # JSONL after all (several objects, one a line)
        if isinstance(whole, dict) and "instance_id" not in whole:
            # SWE-agent's preds.json: {instance_id: prediction}; the harness reads its values.
            for key, value in whole.items():
                yield _line_of(text, json.dumps(key)), value
            return
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            yield number, json.loads(raw)
        except json.JSONDecodeError as e:
            errors.append(InputError(file=str(path), line=number, problem=f"not JSON ({e.msg} at column {e.colno})"))


def _json_list(path: Path, text: str) -> Iterator[tuple[int, Any]]:
    """The items of a JSON list with the line each starts on; a list that does not parse is unreadable."""
    try:
        items = json.loads(text)
    except json.JSONDecodeError as e:
        raise PredictionsFileError(f"{path}:{e.lineno}: not a JSON list of predictions ({e.msg})") from e
    if not isinstance(items, list):
        raise PredictionsFileError(f"{path}: expected a JSON list of predictions")
    decoder, pos = json.JSONDecoder(), text.index("[") + 1
    for item in items:
        while text[pos] in " \t\r\n,":
            pos += 1
        line = text.count("\n", 0, pos) + 1
        _, pos = decoder.raw_decode(text, pos)
        yield line, item


def _line_of(text: str, needle: str) -> int:
    at = text.find(needle)
    return text.count("\n", 0, at) + 1 if at >= 0 else 1


def _prediction(file: str, line: int, entry: Any) -> Prediction | InputError:
    if not isinstance(entry, dict):
        return InputError(file=file, line=line, problem=f"expected a JSON object, got {type(entry).__name__}")
    iid = entry.get("instance_id")
    named = iid if isinstance(iid, str) else None
    missing = [k for k in KEYS if k not in entry]
    if missing:
        return InputError(
            file=file, line=line, key=missing[0], instance_id=named,
            problem=f"missing (a prediction has {', '.join(KEYS)}; missing: {', '.join(missing)})",
        )
    for key in ("instance_id", "model_name_or_path"):
        if not isinstance(entry[key], str) or not entry[key].strip():
            return InputError(
                file=file, line=line, key=key, instance_id=named, problem=f"must be a non-empty string, got {entry[key]!r}"
            )
    patch = entry["model_patch"]
    if patch is not None and not isinstance(patch, str):
        return InputError(
            file=file, line=line, key="model_patch", instance_id=named,
            problem=f"must be a string (a diff) or null, got {type(patch).__name__}",
        )
    return Prediction(
        instance_id=entry["instance_id"], model_name_or_path=entry["model_name_or_path"], model_patch=patch or "",
        line=line,
    )
