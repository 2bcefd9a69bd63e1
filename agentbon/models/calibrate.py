"""How fast each local server runs the model on this machine: a short measurement on a fixed prompt, cached per
machine and model (docs/models.md, "Which server, and in what format").

Each server is started as a run would start it, evaluates the shared prompt once (``warm_s``: its cost is paid once
per task in a batch, as both servers keep evaluated prompts), then is sent the run's number of requests in flight
(its sandbox slots), each that shared prompt plus a line of its own as the rollouts of a task are, for a fixed
window; the figure is the completion tokens that streamed back within it per second. ``auto`` asks for it only where the CPU's
flags leave the choice open (``models/choice.py``).
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError

from agentbon.config import ModelConfig
from agentbon.files import write_atomic
from agentbon.models.cpu import Cpu
from agentbon.models.weights import agentbon_home

VERSION = 1
"""Part of the cache key: a change to the workload below makes earlier figures stale."""
WINDOW_S = 60.0
"""Seconds each server is measured for, once it answers."""
MAX_TOKENS = 64
"""Completion tokens per request (a request that ends is replaced at once, so the window stays full)."""
SLOTS = {"llama-cpp": 2, "vllm": 16}
"""Requests in flight per server: the sandbox slots a run gives it (``RunConfig.slots``)."""


class Measured(BaseModel):
    """One server's figure."""

    model_config = ConfigDict(frozen=True)

    launcher: str
    tokens_per_s: float
    """Completion tokens streamed back per second over the window, all requests together."""
    in_flight: int
    ready_s: float
    """Seconds from launch until the server answered."""
    warm_s: float = 0.0
    """Seconds the first evaluation of the shared prompt took (before the window)."""
    window_s: float
    tokens: int
    error: str | None = None
    """Why the server could not be measured (it counts as 0 tokens/s)."""


class Calibration(BaseModel):
    """The figures of every server measured on this machine for one model."""

    model_config = ConfigDict(frozen=True)

    key: str
    cpu: str
    measured: tuple[Measured, ...]
    at: str

    def rate(self, launcher: str) -> float | None:
        """The launcher's tokens/s, or None where it was not measured."""
        return next((m.tokens_per_s for m in self.measured if m.launcher == launcher), None)

    def figures(self) -> str:
        """``llama-cpp 11.2 tokens/s (2 in flight), vllm 0.5 tokens/s (16 in flight)``."""
        return ", ".join(f"{m.launcher} {m.tokens_per_s:.1f} tokens/s ({m.in_flight} in flight)" for m in self.measured)


def cache_path() -> Path:
    """``$AGENTBON_HOME/calibration.json``: figures by machine and model."""
    return agentbon_home() / "calibration.json"


def cache_key(cpu: Cpu, model: ModelConfig, servers: dict[str, str]) -> str:
    """What the figures depend on: the CPU (name, cores, flags), the model each server loads (``servers``: launcher
    to a path identity), the threads settings and the workload's version."""
    facts = {
        "version": VERSION, "cpu": cpu.name, "cores": cpu.cores, "flags": sorted(cpu.flags), "servers": servers,
        "threads": model.threads, "vllm_cpu_threads": model.vllm_cpu_threads, "ctx": model.ctx,
    }  # fmt: skip
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()[:16]


def load(key: str, path: Path | None = None) -> Calibration | None:
    """The cached calibration under ``key`` (None where absent, or where the file is unreadable)."""
    path = path or cache_path()
    try:
        entries = json.loads(path.read_text())
        return Calibration.model_validate(entries[key]) if key in entries else None
    except (OSError, ValueError, ValidationError, TypeError):
        return None


def save(calibration: Calibration, path: Path | None = None) -> None:
    """Add ``calibration`` to the cache (written whole: agentbon/files.py)."""
    path = path or cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        entries = json.loads(path.read_text())
        if not isinstance(entries, dict):
            entries = {}
    except (OSError, ValueError):
        entries = {}
    entries[calibration.key] = calibration.model_dump(mode="json")
    write_atomic(path, json.dumps(entries, indent=1))


def warm(endpoint: str, name: str, *, api_key: str | None = None, timeout_s: float = 900.0) -> float:
    """Seconds one request of the shared prompt takes with a single completion token (the server then holds it)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    body = {"model": name, "messages": prompt(-1), "max_tokens": 1, "temperature": 0.0}
    t0 = time.monotonic()
    with httpx.Client(timeout=timeout_s, trust_env=False, headers=headers) as http:
        http.post(f"{endpoint.rstrip('/')}/chat/completions", json=body).raise_for_status()
    return time.monotonic() - t0


def prompt(i: int) -> list[dict[str, str]]:
    """The fixed workload: about 1,500 tokens of code shared by every request, then a line of its own (``i`` -1: the
    shared part alone, as ``warm`` sends it)."""
    code = "\n".join(f"def scale_{j}(values, factor={j}):\n    return [v * factor + {j} for v in values]\n" for j in range(60))
    return [
        {"role": "system", "content": "You are a careful Python programmer."},
        {"role": "user", "content": code + ("" if i < 0 else f"\n# request {i}\nWrite pytest tests for every function above.")},
    ]


def measure(
    endpoint: str, name: str, *, in_flight: int, window_s: float = WINDOW_S, api_key: str | None = None
) -> tuple[int, float]:
    """Completion tokens streamed back from ``in_flight`` concurrent requests within ``window_s`` seconds, and the
    seconds measured. A request that ends is replaced; streams still open at the end are cut."""
    deadline = time.monotonic() + window_s
    counts = [0] * in_flight
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def stream(slot: int) -> None:
        i = slot
        with httpx.Client(timeout=httpx.Timeout(window_s + 30.0), trust_env=False, headers=headers) as http:
            while time.monotonic() < deadline:
                body = {"model": name, "messages": prompt(i), "max_tokens": MAX_TOKENS, "temperature": 0.8, "stream": True}
                try:
                    with http.stream("POST", f"{endpoint.rstrip('/')}/chat/completions", json=body) as reply:
                        for line in reply.iter_lines():
                            if time.monotonic() >= deadline:
                                return
                            counts[slot] += _tokens(line)
                except httpx.HTTPError:
                    return
                i += in_flight

    start = time.monotonic()
    threads = [threading.Thread(target=stream, args=(s,), daemon=True) for s in range(in_flight)]
    for t in threads:
        t.start()
    for t in threads:  # a stream still waiting for its next token at the deadline is left (it counts nothing more)
        t.join(max(deadline - time.monotonic(), 0.0) + 1.0)
    return sum(counts), min(time.monotonic(), deadline) - start


def _tokens(line: str) -> int:
    """1 for a streamed chunk that carries completion text (each chunk is one token on both servers), else 0."""
    if not line.startswith("data:") or line.strip() == "data: [DONE]":
        return 0
    try:
        choices = json.loads(line[5:]).get("choices") or []
    except ValueError:
        return 0
    return int(any((c.get("delta") or {}).get("content") for c in choices))


def calibrate(
    model: ModelConfig,
    cpu: Cpu,
    launchers: Sequence[str],
    *,
    servers: dict[str, str],
    log: Callable[[str], None] = lambda msg: None,
    start: Callable[[ModelConfig], Any] | None = None,
    window_s: float = WINDOW_S,
    cache: Path | None = None,
) -> Calibration:
    """Measure each launcher's server on this machine and cache the figures in ``cache`` (default ``cache_path()``;
    ``start(config)`` returns a not-yet-started ``LocalServer``: the real ones by default)."""
    from agentbon.models import local_server

    start = start or (lambda config: local_server(config))
    results = []
    for launcher in launchers:
        in_flight = SLOTS.get(launcher, 8)
        log(f"calibrating {launcher}: starting it, then {in_flight} requests for {window_s:.0f}s")
        server = start(model.model_copy(update={"launcher": launcher}))
        t0 = time.monotonic()
        try:
            endpoint = server.start()
            ready = time.monotonic() - t0
            key = getattr(server, "api_key", None)
            warm_s = warm(endpoint, model.name, api_key=key)
            tokens, seconds = measure(endpoint, model.name, in_flight=in_flight, window_s=window_s, api_key=key)
            measured = Measured(
                launcher=launcher, tokens_per_s=round(tokens / seconds, 2) if seconds > 0 else 0.0,
                in_flight=in_flight, ready_s=round(ready, 1), warm_s=round(warm_s, 1), window_s=round(seconds, 1),
                tokens=tokens,
            )  # fmt: skip
        except Exception as e:  # a server that cannot start here loses the comparison, with its reason recorded
            measured = Measured(
                launcher=launcher, tokens_per_s=0.0, in_flight=in_flight, ready_s=round(time.monotonic() - t0, 1),
                window_s=0.0, tokens=0, error=f"{type(e).__name__}: {str(e)[:300]}",
            )  # fmt: skip
        finally:
            server.stop()
        log(f"calibrated {launcher}: {measured.tokens_per_s:.1f} tokens/s" + (f" ({measured.error})" if measured.error else ""))
        results.append(measured)
    calibration = Calibration(
        key=cache_key(cpu, model, servers), cpu=cpu.describe(), measured=tuple(results),
        at=datetime.now(UTC).isoformat(timespec="seconds"),
    )  # fmt: skip
    save(calibration, cache)
    return calibration
