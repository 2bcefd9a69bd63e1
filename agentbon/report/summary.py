"""``summary.json``: every figure of a run as a versioned :class:`~agentbon.report.schema.RunReport`."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable

import numpy as np
from pydantic import ValidationError

from agentbon.config import ReportConfig, RunConfig
from agentbon.errors import ConfigError
from agentbon.metrics import doubling_ks
from agentbon.orchestrate.events import Allocated, LauncherChosen, ModelStats
from agentbon.report import schema
from agentbon.report.budget import budget_section
from agentbon.report.calibration import calibration_section
from agentbon.report.compute import Band, Curves, Estimator, compute_curves, fraction
from agentbon.report.costs import cost_section, theory_section
from agentbon.report.data import CANCELLED, CELL_CODES, FAIL, GRADE_INFRA, INFRA, PASS, UNGRADED, RunData, load_run
from agentbon.report.endings import endings_section
from agentbon.report.flags import flag_section
from agentbon.report.frontier import frontier_section
from agentbon.report.instances import rollout_report, winner_report
from agentbon.report.references import references_section
from agentbon.report.scaling import scaling
from agentbon.report.schema import RunReport
from agentbon.select import SELECTORS
from agentbon.store import RunStore

__all__ = ["build_report", "build_summary", "report_options", "run_curves"]

ESTIMATORS: dict[str, Estimator] = {name: cls.estimator for name, cls in SELECTORS.items()}
"""How the report computes each selector's selected@k: that selector run on each k-subset (its class's ``estimator``,
docs/estimators.md section 4); a name no longer in the registry is read as a ranking."""


def report_options(config: RunConfig, **overrides: object) -> ReportConfig:
    """The run config's ``report`` section, with explicit overrides; a bad value names its field."""
    raw = {**dict(config.report), **{k: v for k, v in overrides.items() if v is not None}}
    try:
        return ReportConfig.model_validate(raw)
    except ValidationError as e:
        problems = "; ".join(f"report.{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors())
        raise ConfigError(f"config.yaml: {problems}") from e


def run_curves(data: RunData, options: ReportConfig) -> Curves:
    """Curves for every selector and oracle of the run, from its curve sample (docs/estimators.md)."""
    ks = doubling_ks(data.n) if data.n else [1]
    # A vote is taken again inside each subset: it reads the patches' clusters, not the sizes it recorded over all N.
    own = {name: np.where(np.isnan(s), np.nan, data.clusters) if ESTIMATORS.get(name) == "majority" else s
           for name, s in data.scores.items()}  # fmt: skip
    scores = {**own, **data.oracle_scores}
    candidates = {name: data.candidate for name in data.scores}
    candidates.update({name: data.oracle_candidate for name in data.oracle_scores})  # flags never move the oracle

    def curves_of(curve: np.ndarray, names: list[str]) -> Curves:
        return compute_curves(data.correct, curve, {name: scores[name] for name in names}, ks, options.bootstrap,
                              options.confidence, options.seed, estimators=ESTIMATORS,
                              candidates={name: c for name, c in candidates.items() if name in names},
                              softmax=options.soft_bon, majority=options.majority,
                              fallbacks={name: data.fallback for name in data.scores if name in names}
                              if data.fallback is not None else None,
                              comparisons={name: c for name, c in data.comparisons.items() if name in names})  # fmt: skip

    return without_left_out(curves_of(data.curve, list(scores)), data, curves_of)


def without_left_out(curves: Curves, data: RunData, curves_of: Callable[[np.ndarray, list[str]], Curves]) -> Curves:
    """Each selector's selected@k, loss@k and gap over the tasks it selected: a task whose selection failed on
    infrastructure (``RunData.left_out``) is out of that selector's curves, its loss and gap measured against the
    coverage of the same tasks, never scored 0 (docs/failure-taxonomy.md, "Selection"). Ks the whole report does not
    measure stay unmeasured."""
    rows = np.flatnonzero(curves.included)
    for name, tasks in data.left_out.items():
        if name not in curves.selected or not tasks:
            continue
        curve = data.curve.copy()
        curve[data.left_out_rows(name)] = False
        own = curves_of(curve, [name])
        for series in ("selected", "loss", "gap"):
            band = getattr(own, series)[name]
            getattr(curves, series)[name] = Band(
                *(np.where(curves.measured, v, np.nan) for v in (band.mean, band.lo, band.hi))
            )
        if name in own.boot:
            curves.boot[name] = np.where(curves.measured, own.boot[name], np.nan)
        else:
            curves.boot.pop(name, None)
        if name in own.estimated:
            curves.estimated[name] = own.estimated[name]
        per_task = np.full((rows.size, len(curves.ks)), np.nan)
        per_task[np.searchsorted(rows, np.flatnonzero(own.included))] = own.per_task_selected[name]
        curves.per_task_selected[name] = per_task
    return curves


def serving_stats(store: RunStore) -> schema.Serving | None:
    """The model serving's figures over the run's invocations (``model_stats`` events); None when none recorded."""
    events = store.recorded(ModelStats)
    chosen = store.recorded(LauncherChosen)  # why this server ran (models/choice.py), at each invocation's start
    if not events and not chosen:
        return None
    counted = [e for e in events if e.prefix_cache_queries is not None]
    queries = sum(e.prefix_cache_queries or 0 for e in counted)
    hits = sum(e.prefix_cache_hits or 0 for e in counted)
    timed = [e for e in events if e.gpu_s is not None]  # engine actors report their busy time and GPUs
    last = events[-1] if events else None
    why = chosen[-1] if chosen else None

    def total(values: list[float | None]) -> float | None:  # over every invocation (a resume starts engines again)
        return round(sum(v or 0.0 for v in values), 3) if timed else None

    return schema.Serving(
        launcher=(last.launcher if last else None) or (why.launcher if why else None),
        launcher_reason=why.reason if why else None,
        launcher_figures=why.figures if why else None,
        source=last.source if last else None,
        start_s=[e.start_s for e in events if e.start_s is not None],
        prefix_cache_queries=queries if counted else None,
        prefix_cache_hits=hits if counted else None,
        prefix_cache_hit_rate=round(hits / queries, 6) if queries else None,
        gpu_s=total([e.gpu_s for e in timed]),  # busy x GPUs
        gpu_held_s=total([e.gpu_held_s for e in timed]),  # alive x GPUs
        engine_busy_s=total([e.engine_busy_s for e in timed]),
        engines=[schema.Engine(**row, invocation=i) for i, e in enumerate(events) for row in e.per_engine],
    )


def _r(values: np.ndarray) -> list[float | None]:
    return [fraction(v) for v in np.asarray(values, float).ravel()]


def _band(b: Band) -> schema.Band:
    return schema.Band(mean=_r(b.mean), lo=_r(b.lo), hi=_r(b.hi))


def _selector_block(data: RunData, curves: Curves, name: str) -> schema.SelectorMetrics:
    chosen = data.selections.get(name, {})
    winners = [s.winner for s in chosen.values() if s.winner]
    resolved = sum(1 for w in winners if (v := data.grades.get(w)) is not None and v.status == "pass")
    left_out = data.left_out.get(name, {})
    tasks = len(data.task_ids) - len(left_out)  # a task left out is not scored against the selector
    e = curves.estimated.get(name)
    return schema.SelectorMetrics(
        estimator=ESTIMATORS.get(name, "rank"),
        estimate=None if e is None else schema.Estimate(se=_r(np.where(curves.measured, e.se, np.nan)), draws=e.draws),
        selected=_band(curves.selected[name]),
        loss=_band(curves.loss[name]),
        gap_recovered=_band(curves.gap[name]),
        winners=len(winners),
        winners_resolved=resolved,
        winner_accuracy=round(resolved / tasks, 6) if tasks else 0.0,
        tasks_without_selection=tasks - len(chosen),
        tasks_left_out=dict(left_out),
    )


def infra_section(data: RunData) -> schema.Infra:
    """Infra errors left in the store (rollouts, verifications) by kind, and the failed attempts the run logged."""
    rollouts = [r for r in data.rollouts.values() if r.status == "infra_error"]
    verdicts = [v for role in (data.grades, data.evidence) for v in role.values() if v.status == "infra_error"]
    events = data.infra_events
    return schema.Infra(
        rollouts=len(rollouts),
        rollouts_by_kind=dict(Counter(r.exit_status or "other" for r in rollouts)),  # the failure's kind
        verifications=len(verdicts),
        verifications_by_kind=dict(Counter(v.error_kind or "VerifyInfra" for v in verdicts)),
        attempts_failed=len(events),
        attempts_by_kind=dict(Counter(e.error or "other" for e in events)),
        attempts_retried=sum(1 for e in events if e.retry),
        tasks_not_prepared=dict(data.unprepared),
        selections=sum(len(tasks) for tasks in data.left_out.values()),
    )


def early_stop_section(data: RunData) -> schema.EarlyStop:
    """Which tasks early stop cut short, the fixed part their curves use, and the compute it saved."""
    row = {t: i for i, t in enumerate(data.task_ids)}
    stops = data.early_stop.values()
    return schema.EarlyStop(
        tasks=[schema.EarlyStopTask(task_id=t, fixed=s.fixed, curve_n=int(data.curve[row[t]].sum()),
                             rollouts_not_run=s.rollouts_not_run, est_sandbox_s_saved=round(s.est_sandbox_s_saved, 1))
               for t, s in data.early_stop.items()],
        rollouts_not_run=sum(s.rollouts_not_run for s in stops),
        est_sandbox_s_saved=round(sum(s.est_sandbox_s_saved for s in stops), 1),
    )  # fmt: skip


def rollout_counts(data: RunData) -> schema.RolloutCounts:
    """Rollouts by what became of them: samples, and each reason one is left out of n."""
    cells = data.cells
    left_out = {code: int((cells == code).sum()) for code in (INFRA, GRADE_INFRA, UNGRADED, CANCELLED)}
    empty = sum(1 for r in data.rollouts.values() if r.finished and not r.patch.strip()
                and (g := data.grades.get(r.rollout_id)) is not None and g.decided)  # fmt: skip
    return schema.RolloutCounts(
        total=int(data.present.sum()),
        valid=int(data.valid.sum()),
        infra_error=left_out[INFRA],
        grade_infra_error=left_out[GRADE_INFRA],
        ungraded=left_out[UNGRADED],
        cancelled=left_out[CANCELLED],
        graded=int(np.isin(cells, (PASS, FAIL)).sum()),
        empty_patch=empty,
        left_out=sum(left_out.values()),
        isolation=dict(Counter(r.isolation for r in data.rollouts.values() if r.status != "infra_error")),
    )


def metrics_section(data: RunData, curves: Curves, options: ReportConfig) -> schema.Metrics:
    """The curves as ``summary.json`` holds them: pass@1, coverage and each selector's and oracle's bands."""
    in_curves = data.curve.sum(axis=1)[curves.included]
    coverage = _band(curves.coverage)
    return schema.Metrics(
        confidence=options.confidence,
        bootstrap=options.bootstrap,
        pass_at_1=schema.Point(mean=coverage.mean[0], lo=coverage.lo[0], hi=coverage.hi[0]),
        coverage=coverage,
        measured=[bool(m) for m in curves.measured],
        curve_tasks=curves.tasks,
        tasks_without_sample=[t for i, t in enumerate(data.task_ids) if not curves.included[i]],
        fewest_samples=int(in_curves.min()) if in_curves.size else 0,
        selectors={name: _selector_block(data, curves, name) for name in data.selectors},
        oracle={name: _selector_block(data, curves, name) for name in data.oracles},
    )


def task_rows(data: RunData, curves: Curves) -> list[schema.TaskRow]:
    """One row per task: its samples, correct ones, cells, coverage per k and each selector's winner."""
    valid_n, curve_n = data.valid.sum(axis=1), data.curve.sum(axis=1)
    correct_n = (data.correct * data.valid).sum(axis=1).astype(int)
    cells = data.cells
    return [
        schema.TaskRow(
            task_id=task_id,
            n=int(valid_n[i]),
            curve_n=int(curve_n[i]),
            correct=int(correct_n[i]),
            infra_errors=int(np.isin(cells[i], (INFRA, GRADE_INFRA)).sum()),
            cells="".join(CELL_CODES[c] for c in cells[i]),
            coverage=_r(curves.per_task_coverage[i]),
            winners={name: sel[task_id].winner for name, sel in data.selections.items() if task_id in sel},
            early_stopped=task_id in data.early_stop,
        )
        for i, task_id in enumerate(data.task_ids)
    ]


def build_summary(store: RunStore, data: RunData | None = None, **overrides: object) -> dict:
    """:func:`build_report` as ``summary.json``'s dict (for callers that read keys)."""
    return build_report(store, data, **overrides).to_dict()


def build_report(store: RunStore, data: RunData | None = None, **overrides: object) -> RunReport:
    """Everything ``report.md``, ``report.html`` and the terminal show, as one typed, versioned record."""
    data = data or load_run(store)
    options = report_options(data.config, **overrides)
    curves = run_curves(data, options)
    costs = cost_section(data, curves, options)
    scale = scaling(curves, options.targets)
    for name in data.oracles:  # the oracle is reported as such, never in the scaling table's selectors
        scale.selectors.pop(name, None)
        costs.selectors.pop(name, None)
    return RunReport(
        run_id=data.run_id,
        generated_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        model=data.config.model.name,
        n=data.n,
        ks=curves.ks,
        tasks=len(data.task_ids),
        primary_selector=data.primary,
        selectors=data.selectors,
        oracles=data.oracles,
        rollouts=rollout_counts(data),
        endings=endings_section(data),
        infra=infra_section(data),
        early_stop=early_stop_section(data),
        flags=flag_section(data),
        calibration=calibration_section(data, options),
        budget=budget_section(data, store.recorded(Allocated)),
        frontier=frontier_section(data),
        **dict(winner_report(data, data.primary)),
        rollout_report=rollout_report(data),
        metrics=metrics_section(data, curves, options),
        scaling=scale,
        cost=costs,
        serving=serving_stats(store),
        theory=theory_section(data.n, costs.sample_cost, costs.scoring_cost, options, costs.unit),
        references=references_section(),
        per_task=task_rows(data, curves),
    )
