"""``summary.json``: every figure of a run, versioned, with SWE-bench's report keys beside agentbon's metrics."""

from __future__ import annotations

import datetime as dt

import numpy as np
from pydantic import ValidationError

from agentbon.config import ReportConfig
from agentbon.errors import ConfigError
from agentbon.metrics import doubling_ks
from agentbon.report.compute import Curves, compute_curves, scaling
from agentbon.report.costs import cost_section, theory_section
from agentbon.report.data import CANCELLED, CELL_CODES, FAIL, INFRA, PASS, RunData, load_run
from agentbon.report.instances import rollout_report, winner_report
from agentbon.report.references import LABEL, REFERENCES
from agentbon.store import RunStore

SUMMARY_SCHEMA = "agentbon.summary"
SUMMARY_VERSION = 1


def report_options(config: dict, **overrides: object) -> ReportConfig:
    """The run config's ``report`` section, with explicit overrides; a bad value names its field."""
    raw = {**(config.get("report") or {}), **{k: v for k, v in overrides.items() if v is not None}}
    try:
        return ReportConfig.model_validate(raw)
    except ValidationError as e:
        problems = "; ".join(f"report.{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        raise ConfigError(f"config.yaml: {problems}") from e


def run_curves(data: RunData, options: ReportConfig) -> Curves:
    """Curves for every selector and oracle of the run, from its arrays."""
    ks = doubling_ks(data.n) if data.n else [1]
    scores = {**data.scores, **data.oracle_scores}
    return compute_curves(data.correct, data.valid, scores, ks, options.bootstrap, options.confidence, options.seed)


def serving_stats(store: RunStore) -> dict | None:
    """The model serving's figures over the run's invocations (``model_stats`` events); None when none recorded."""
    events = store.events_of("model_stats")
    if not events:
        return None
    queries = sum(e.get("prefix_cache_queries") or 0 for e in events)
    hits = sum(e.get("prefix_cache_hits") or 0 for e in events)
    known = any("prefix_cache_queries" in e for e in events)
    return {
        "launcher": events[-1].get("launcher"),
        "source": events[-1].get("source"),
        "start_s": [e["start_s"] for e in events if e.get("start_s") is not None],
        "prefix_cache_queries": queries if known else None,
        "prefix_cache_hits": hits if known else None,
        "prefix_cache_hit_rate": round(hits / queries, 6) if queries else None,
    }


def _selector_block(data: RunData, curves: Curves, name: str) -> dict:
    chosen = data.selections.get(name, {})
    winners = [s.winner for s in chosen.values() if s.winner]
    resolved = sum(1 for w in winners if (v := data.grades.get(w)) is not None and v.status == "pass")
    return {
        "selected": curves.selected[name].as_dict(),
        "loss": curves.loss[name].as_dict(),
        "gap_recovered": curves.gap[name].as_dict(),
        "winners": len(winners),
        "winners_resolved": resolved,
        "winner_accuracy": round(resolved / len(data.task_ids), 6) if data.task_ids else 0.0,
        "tasks_without_selection": len(data.task_ids) - len(chosen),
    }


def build_summary(store: RunStore, data: RunData | None = None, **overrides: object) -> dict:
    """Everything ``report.md``, ``report.html`` and the terminal show, as one JSON-ready dict."""
    data = data or load_run(store)
    options = report_options(data.config, **overrides)
    curves = run_curves(data, options)
    valid_n = data.valid.sum(axis=1)
    correct_n = (data.correct * data.valid).sum(axis=1).astype(int)
    costs = cost_section(data, curves, options)
    summary: dict = {
        "schema": SUMMARY_SCHEMA,
        "version": SUMMARY_VERSION,
        "run_id": data.run_id,
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "model": (data.config.get("model") or {}).get("name"),
        "n": data.n,
        "ks": curves.ks,
        "tasks": len(data.task_ids),
        "primary_selector": data.primary,
        "selectors": data.selectors,
        "oracles": data.oracles,
        "rollouts": {
            "total": int(data.present.sum()),
            "valid": int(data.valid.sum()),
            "infra_error": int((data.cells == INFRA).sum()),
            "cancelled": int((data.cells == CANCELLED).sum()),
            "graded": int(np.isin(data.cells, (PASS, FAIL)).sum()),
            "empty_patch": sum(1 for r in data.rollouts.values() if data.is_valid(r) and not r.patch.strip()),
        },
        **winner_report(data, data.primary),
        "rollout_report": rollout_report(data),
        "metrics": {
            "confidence": options.confidence,
            "bootstrap": options.bootstrap,
            "pass@1": {k: v[0] for k, v in curves.coverage.as_dict().items()},
            "coverage": curves.coverage.as_dict(),
            "selectors": {name: _selector_block(data, curves, name) for name in data.selectors},
            "oracle": {name: _selector_block(data, curves, name) for name in data.oracles},
        },
        "scaling": scaling(curves, options.targets),
        "cost": costs,
        "serving": serving_stats(store),
        "theory": theory_section(data.n, costs["sample_cost"], costs["scoring_cost"], options, costs["unit"]),
        "references": {"label": LABEL, "entries": REFERENCES},
        "per_task": [
            {
                "task_id": task_id,
                "n": int(valid_n[i]),
                "correct": int(correct_n[i]),
                "infra_errors": int((data.cells[i] == INFRA).sum()),
                "cells": "".join(CELL_CODES[c] for c in data.cells[i]),
                "coverage": curves.per_task_coverage[i].round(6).tolist() if curves.tasks else [],
                "winners": {name: sel[task_id].winner for name, sel in data.selections.items() if task_id in sel},
            }
            for i, task_id in enumerate(data.task_ids)
        ],
    }
    summary["scaling"].pop("ks", None)
    for name in data.oracles:  # the oracle is reported as such, never in the scaling table's selectors
        summary["scaling"]["selectors"].pop(name, None)
        summary["cost"]["selectors"].pop(name, None)
    return summary
