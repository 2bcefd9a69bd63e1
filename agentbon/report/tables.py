"""The report's tables, built once from ``summary.json`` and rendered by the terminal, Markdown and HTML writers."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentbon.metrics.tournament import MAX_SUBSETS
from agentbon.report.schema import Band, Forecast, Point, RunReport, SeriesScaling, Serving, StopCall

NOT_MEASURED = "not measured"


@dataclass
class Table:
    """A titled grid of strings with notes under it."""

    key: str
    title: str
    headers: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)


def pct(x: float | None, digits: int = 1) -> str:
    """A fraction as percentage points (0.428 → ``42.8``); ``—`` for none."""
    return "—" if x is None else f"{100 * x:.{digits}f}"


def gain(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:+.1f}"


def num(x: float | None, unit: str = "") -> str:
    if x is None:
        return "—"
    text = f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.3g}"
    return f"{text} {unit}".rstrip()


def interval(mean: float | None, lo: float | None, hi: float | None) -> str:
    """A fraction and its interval in points (``42.8 [38.1, 47.5]``); ``not measured`` without a value."""
    return NOT_MEASURED if mean is None else f"{pct(mean)} [{pct(lo)}, {pct(hi)}]"


def band(b: Band, i: int) -> str:
    return interval(b.mean[i], b.lo[i], b.hi[i])


def last_measured(s: RunReport) -> int:
    """Index into ``ks`` of the largest measured k (0 when none is)."""
    return max((i for i, m in enumerate(s.metrics.measured) if m), default=0)


def _slope(slope: float | None, lo: float | None, hi: float | None) -> str:
    if slope is None:
        return "—"
    if lo is None or hi is None:
        return f"{slope:+.1f}"
    return f"{slope:+.1f} [{lo:+.1f}, {hi:+.1f}]"


def stop_text(stop: StopCall) -> str:
    """The "does doubling still pay" call in a few words."""
    slope = _slope(stop.slope, stop.lo, stop.hi)
    if stop.call == "stops":
        return f"stops from k = {stop.from_k}: {slope} pts/doubling"
    if stop.call == "too few doublings":
        return f"— (needs {stop.min_doublings} measured doublings)"
    return f"{stop.call}: {slope} pts/doubling from k = {stop.from_k}"


def forecast_text(f: Forecast | None) -> str:
    if f is None or f.value is None:
        return "—"
    return f"{pct(f.value)} [{pct(f.lo)}, {pct(f.hi)}] at k = {f.to_k} ({gain(f.gain)})"


def not_measured_note(s: RunReport) -> str | None:
    ks, measured = s.ks, s.metrics.measured
    if all(measured):
        return None
    top = ks[last_measured(s)] if any(measured) else None
    why = f"a task in the curves has only {s.metrics.fewest_samples} samples" if top else "no task has a sample"
    return (f"{NOT_MEASURED}: k above {top or 0} ({why}; "
            "k > n is never clamped; see docs/estimators.md).")  # fmt: skip


def headline(s: RunReport) -> Table:
    m, ks, last, r = s.metrics, s.ks, last_measured(s), s.rollouts
    p1 = m.pass_at_1
    rows = [
        ["tasks (in the curves)", f"{s.tasks} ({m.curve_tasks})"],
        ["rollouts per task (N)", str(s.n)],
        ["rollouts: samples / left out of n", f"{r.valid} / {r.left_out}"],
        ["pass@1", interval(p1.mean, p1.lo, p1.hi)],
        [f"coverage@{ks[last]} (pass@{ks[last]})", band(m.coverage, last)],
    ]
    if last != len(ks) - 1:
        rows.append([f"coverage@{ks[-1]}", NOT_MEASURED])
    primary = s.primary_selector
    if primary:
        p = m.selectors[primary]
        rows += [
            [f"selected@{ks[last]} ({primary})", band(p.selected, last)],
            [f"selection loss@{ks[last]}", band(p.loss, last)],
            [f"gap recovered@{ks[last]}", band(p.gap_recovered, last)],
            ["winners resolved (SWE-bench keys)", f"{s.resolved_instances} / {s.total_instances}"],
        ]
    if s.flags.rollouts:
        rows.append(["flagged rollouts (see Flags)", f"{s.flags.rollouts} / {r.total}"])
    early = s.early_stop
    if early.tasks:
        rows.append(["early stop: rollouts not run / est. sandbox-seconds saved",
                     f"{early.rollouts_not_run} / {num(early.est_sandbox_s_saved)}"])  # fmt: skip
    return Table("headline", "Headline", ["", "value"], rows, _headline_notes(s))


def _headline_notes(s: RunReport) -> list[str]:
    """What the headline's figures leave out and why: infra errors, tasks without samples, early stop, weaker
    isolation, tasks a selector's failed selection left out, ks not measured."""
    m, r, early = s.metrics, s.rollouts, s.early_stop
    conf = int(round(100 * m.confidence))
    notes = [f"Accuracies in points; brackets: {conf}% bootstrap interval over tasks ({m.bootstrap} resamples)."]
    parts = [(r.infra_error, "rollout infra errors"), (r.grade_infra_error, "grade verifications that hit infra "
             "errors"), (r.ungraded, "rollouts without a grade"), (r.cancelled, "cancelled rollouts")]  # fmt: skip
    if r.left_out:
        listed = ", ".join(f"{count} {what}" for count, what in parts if count)
        notes.append(f"Left out of n ({r.left_out}): {listed}; infra errors are listed in error_ids.")
    infra = s.infra
    if infra.rollouts or infra.verifications:
        kinds = dict(infra.rollouts_by_kind)
        for k, v in infra.verifications_by_kind.items():
            kinds[k] = kinds.get(k, 0) + v
        notes.append(f"Infra errors left: {infra.rollouts} rollouts, {infra.verifications} verifications ("
                     + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())) + "); a resume re-runs them.")  # fmt: skip
    unprepared = infra.tasks_not_prepared
    if unprepared:
        notes.append(f"{len(unprepared)} task(s) could not be prepared, their rollouts not run (a resume runs them): "
                     + "; ".join(f"{t} ({why[:80]})" for t, why in list(unprepared.items())[:5]))  # fmt: skip
    for name, block in m.selectors.items():
        if left := block.tasks_left_out:
            notes.append(f"{name}: {len(left)} task(s) left out of its curves and winners, their selection failed on "
                         f"infrastructure (a resume selects them): " + ", ".join(list(left)[:10]))  # fmt: skip
    weaker = {how: count for how, count in r.isolation.items() if how != "docker"}
    if weaker:
        notes.append("Weaker isolation than a hardened sandbox: " + "; ".join(
            f"{count} rollout{'s' * (count > 1)} {how}" for how, count in sorted(weaker.items())) + ".")  # fmt: skip
    if missing := m.tasks_without_sample:
        notes.append(f"{len(missing)} tasks without any sample are left out of the curves: "
                     + ", ".join(missing[:10]) + ("…" if len(missing) > 10 else ""))  # fmt: skip
    if early.tasks:
        upto = "/".join(str(f - 1) for f in sorted({t.fixed for t in early.tasks}))
        names = [t.task_id for t in early.tasks]
        notes.append(
            f"Early stop cut {len(names)} tasks short; their curves use only rollouts 0..{upto}, "
            f"fixed in advance (unbiased; the rest are candidates for the winners only): "
            + ", ".join(names[:10])
            + ("…" if len(names) > 10 else "")
            + "."
        )
    if note := not_measured_note(s):
        notes.append(note)
    return notes


FLAG_MEANING = {
    "tampered": "changed tests, conftest, runner config or startup hooks (undone before the run)",
    "forged": "the verifier's canary tests did not come out as planted (verdict failed)",
    "disagreement": "the independent check of the FAIL_TO_PASS tests disagrees with the runner",
    "suspicious_code": "added code reaches into test-framework internals or exits early",
    "large_file": "adds a file over the size limit",
    "binary": "adds binary content",
    "outside_write": "the test run wrote outside the repository",
}


def _listed(items: list[str], most: int = 10) -> str:
    return ", ".join(items[:most]) + ("…" if len(items) > most else "")


def flags(s: RunReport) -> Table | None:
    """One row per flag kind seen: rollouts, tasks, flagged winners of the primary selector (None when no flag)."""
    f = s.flags
    if not f.rollouts:
        return None
    primary = s.primary_selector
    won = (f.winners.get(primary) or {}) if primary else {}
    headers = ["flag", "rollouts", "tasks", f"winners ({primary})" if primary else "winners", "meaning"]
    rows = [
        [kind, str(count), str(f.tasks_by_kind.get(kind, 0)), str(sum(kind in k for k in won.values())),
         FLAG_MEANING.get(kind, "")]
        for kind, count in f.by_kind.items()
    ]  # fmt: skip
    allowed = ", ".join(f.allowed) or "none"
    notes = [
        f"{f.rollouts} flagged rollouts. Selectors never choose a candidate whose evidence verdict carries a flag "
        f"outside select.allow_flags (now: {allowed}); a task whose candidates are all flagged gets "
        + ("a choice among them (select.flagged_fallback: flagged)." if f.fallback == "flagged" else "no winner.")
        + " See docs/security.md (Flags)."
    ]
    tasks = []
    for task_id, kinds in f.per_task.items():
        per_kind = [f"{kind} {_listed([rid.rsplit('/', 1)[1] for rid in rids])}" for kind, rids in kinds.items()]
        tasks.append(f"{task_id} ({'; '.join(per_kind)})")
    notes.append(f"Flagged tasks ({len(tasks)}; rollout indices per kind): {_listed(tasks)}.")
    for name, chosen in f.winners.items():
        if chosen:
            what = "oracle" if name in s.oracles else "selector"
            items = [f"{t} ({', '.join(k)})" for t, k in chosen.items()]
            notes.append(f"⚠ {name} ({what}) chose flagged winners on {len(items)} tasks: {_listed(items)}.")
    return Table("flags", "Flags (what verification saw candidates do)", headers, rows, notes)


def selectors(s: RunReport) -> Table:
    m, sc, last = s.metrics, s.scaling, last_measured(s)
    k = s.ks[last]
    rows = []
    for name in s.selectors:
        b, f = m.selectors[name], sc.selectors[name]
        slope = _slope(f.fit.points_per_doubling, f.fit.lo, f.fit.hi) if f.fit else "—"
        rows.append([
            name, band(b.selected, last), pct(b.loss.mean[last]), pct(b.gap_recovered.mean[last], 0) + "%",
            f"{b.winners_resolved} / {s.tasks}", slope, stop_text(f.stop), forecast_text(f.forecast),
            str(f.verifier_ceiling_at_k or "—"),
        ])  # fmt: skip
    for name in s.oracles:
        b = m.oracle[name]
        rows.append([f"{name} (oracle: grading tests)", band(b.selected, last), "—", "—",
                     f"{b.winners_resolved} / {s.tasks}", "—", "—", "—", "—"])  # fmt: skip
    headers = [
        "selector", f"selected@{k}", f"loss@{k}", "gap recovered", "winners resolved", "pts/doubling",
        "does doubling pay", "forecast N→2N", "verifier ceiling from k",
    ]  # fmt: skip
    notes = []
    if s.oracles:
        notes.append("The oracle picks with the grading tests: an upper bound (= coverage), never a selector.")
    drawn = [n for n in s.selectors if m.selectors[n].estimator != "rank" and m.selectors[n].estimate is None]
    if drawn:
        notes.append(", ".join(drawn) + ": selected@k is the exact expectation over k-subsets of the selector run on "
                     "each (random: a uniform choice; soft-bon: a softmax over critic scores; majority: a vote inside "
                     "the subset; a tournament: the comparisons among the subset's members), not one draw.")  # fmt: skip
    for name in s.selectors:
        if (e := m.selectors[name].estimate) is not None and m.selectors[name].estimator == "tournament":
            se = e.se[last]
            notes.append(f"{name}: selected@k sums every k-subset where a task has at most {MAX_SUBSETS:,} of them and "
                         f"elsewhere averages {e.draws:,} uniform k-subsets drawn per task, an unbiased estimate (Monte "
                         f"Carlo standard error at k = {k}: {'—' if se is None else f'{100 * se:.3f}'} points, already "
                         "inside the interval; docs/estimators.md).")  # fmt: skip
        elif e is not None:
            se = e.se[last]
            notes.append(f"{name}: selected@k is an unbiased estimate of the expectation of its draw, not the exact "
                         f"sum over k-subsets ({e.draws} draw(s) of each kind per task; Monte Carlo standard error "
                         f"at k = {k}: {'—' if se is None else f'{100 * se:.3f}'} points, already inside the interval). "
                         "report.soft_bon / report.majority: auto sums exactly up to about half a second of work, "
                         "exact always (docs/estimators.md).")  # fmt: skip
    return Table("selectors", f"Selectors at k = {k}", headers, rows, notes)


def scaling(s: RunReport) -> Table:
    """The decision table: what each doubling of N buys, for coverage and the primary selector."""
    ks, m, sc, cost = s.ks, s.metrics, s.scaling, s.cost
    primary = s.primary_selector
    p = m.selectors.get(primary or "")
    kl = s.theory.kl_bound_nats
    rows = []
    for i, k in enumerate(ks):
        row = [str(k), band(m.coverage, i), gain(sc.coverage.gain[i - 1]) if i else ""]
        if p is not None and primary:
            g = sc.selectors[primary].gain
            row += [band(p.selected, i), gain(g[i - 1]) if i else "", pct(p.loss.mean[i])]
        row += [f"{kl.get(str(k), 0.0):.2f}", num(cost.cost_at_k[i], cost.unit)]
        rows.append(row)
    headers = ["k", "coverage@k", "Δ/doubling"]
    if p is not None:
        headers += [f"selected@k ({primary})", "Δ/doubling", "loss@k"]
    headers += ["KL bound (nats)", "cost"]
    notes = _scaling_notes(s, primary)
    return Table("scaling", "What each doubling of N buys", headers, rows, notes)


def _fit_text(label: str, block: SeriesScaling) -> str:
    fit = block.fit
    if fit is None:
        return f"{label}: nothing measured."
    spread = "" if fit.lo is None else f", slope interval [{fit.lo:+.1f}, {fit.hi:+.1f}]"
    text = (f"{label} ≈ {pct(fit.a)} + {fit.points_per_doubling:.1f}·log2 k (R² {fit.r2:.2f}{spread}); "
            f"does doubling pay: {stop_text(block.stop)}")  # fmt: skip
    if block.forecast is not None:
        text += f"; forecast {forecast_text(block.forecast)}"
    return text + "."


def _targets_text(block: SeriesScaling) -> str:
    parts = []
    for t in block.targets:
        if t.reached_at_k is not None:
            parts.append(f"{pct(t.target)}% reached at k = {t.reached_at_k}")
        elif t.extrapolated_k is not None:
            parts.append(f"{pct(t.target)}% needs k ≈ {num(t.extrapolated_k)} (extrapolated)")
    return ", ".join(parts)


def _scaling_notes(s: RunReport, primary: str | None) -> list[str]:
    sc = s.scaling
    notes = [_fit_text("coverage", sc.coverage)]
    if primary:
        p = sc.selectors[primary]
        notes.append(_fit_text(f"selected ({primary})", p))
        if targets := _targets_text(p):
            notes.append(f"Targets ({primary}): {targets}.")
        if p.verifier_ceiling_at_k:
            notes.append(
                f"⚠ Verifier-shaped ceiling: from k = {p.verifier_ceiling_at_k} selected accuracy flattens "
                "(< 1 point per doubling) while coverage still rises — more samples find fixes the selector cannot pick."
            )
    notes.append("Does doubling pay: the least-squares slope over the remaining doublings (two at least) and its "
                 "bootstrap interval — stops once the whole interval is under 1 point; the forecast extends the fit "
                 "over the last two measured doublings by one.")  # fmt: skip
    if note := not_measured_note(s):
        notes.append(note)
    be = s.theory.break_even
    line = f"BoN at N = {be.n} pays {num(be.extra_cost_per_request, be.unit)} extra per request"
    if be.requests is not None:
        line += f"; an RL run costing {num(be.training_cost, be.unit)} breaks even after {num(be.requests)} requests"
    else:
        line += " (set report.rl_training_cost for the RL break-even: training cost / extra cost per request)"
    notes.append(line + ". KL(BoN‖base) ≤ log N − (N−1)/N.")
    return notes


def selected_by_k(s: RunReport) -> Table:
    m, names = s.metrics, [*s.selectors, *s.oracles]
    rows = []
    for i, k in enumerate(s.ks):
        row = [str(k), pct(m.coverage.mean[i])]
        for name in names:
            block = m.selectors[name] if name in m.selectors else m.oracle[name]
            row.append(pct(block.selected.mean[i]))
        rows.append(row)
    headers = ["k", "coverage", *s.selectors, *(o if "oracle" in o else f"{o} (oracle)" for o in s.oracles)]
    note = not_measured_note(s)
    return Table("selected_by_k", "selected@k by selector", headers, rows, [note] if note else [])


def cost(s: RunReport) -> Table:
    c, unit = s.cost, s.cost.unit
    rows = [
        ["tokens: prompt / completion / cached", f"{c.prompt_tokens:,} / {c.completion_tokens:,} / {c.cached_tokens:,}"],
        ["sandbox-seconds (rollouts)", num(c.sandbox_s)],
        ["verification seconds: evidence / grade", f"{num(c.verify_evidence_s)} / {num(c.verify_grade_s)}"],
        ["rollout wall clock p50 / p99", f"{num(c.rollout_wall_p50_s)} s / {num(c.rollout_wall_p99_s)} s"],
        ["task critical path (slowest rollout) p50 / p99 / max",
         f"{num(c.critical_path_p50_s)} s / {num(c.critical_path_p99_s)} s / {num(c.critical_path_max_s)} s"],
        ["cost per rollout / per scoring", f"{num(c.sample_cost, unit)} / {num(c.scoring_cost, unit)}"],
    ]  # fmt: skip
    if (serving := s.serving) is not None:
        rows += _serving_rows(serving, c.rollouts)
    at = f" at k = {c.per_solved_k}" if c.per_solved_k else ""
    for name, sel in c.selectors.items():
        rows.append([f"cost per solved task{at} ({name})", num(sel.per_solved_task, unit)])
        marginal = ", ".join(num(x) for x in sel.per_extra_point)
        rows.append([f"cost per extra point, each doubling ({name})", f"{marginal} {unit}"])
        if sel.judge_tokens is not None:
            spent = ", ".join(f"k={k}: {t:,.0f}" for k, t in zip(s.ks, sel.judge_tokens, strict=True))
            rows.append([f"judge tokens a task, on a k-subset ({name})", spent])
    notes = [f"Unit: {unit}."]
    if c.cost_tasks is not None:
        notes.append(f"Best-of-k costs are over the {c.cost_tasks} task(s) in the curves, the tasks their accuracy "
                     "is measured on; a cost per solved task is the cost and the tasks solved at the largest k "
                     "measured (docs/estimators.md, \"Costs\").")  # fmt: skip
    return Table("cost", "Cost", ["", "value"], rows, notes)


def _serving_rows(v: Serving, rollouts: int) -> list[list[str]]:
    """The cost table's rows on the model server: why it ran, its prefix cache, GPU-seconds, each engine."""
    rows = []
    if v.launcher_reason:
        rows.append(["model server", f"{v.launcher}: {v.launcher_reason}"])
    if v.prefix_cache_hit_rate is not None:
        rows.append(["prefix-cache hit rate (tokens)", f"{pct(v.prefix_cache_hit_rate)}% of "
                     f"{v.prefix_cache_queries:,} prompt tokens ({v.prefix_cache_hits:,} hits)"])  # fmt: skip
    if v.gpu_s is not None:
        rows.append(["GPU-seconds: engines busy x GPUs / held (alive x GPUs); per rollout",
                     f"{num(v.gpu_s)} / {num(v.gpu_held_s)}; {num(v.gpu_s / max(1, rollouts))}"])  # fmt: skip
    for e in v.engines:
        speed = "—" if e.tokens_per_s is None else f"{e.tokens_per_s:,.1f} completion tokens/s"
        where = f"{e.gpus} GPU(s)" if e.gpus else "CPU"
        run = f", run {e.invocation + 1}" if e.invocation else ""
        rows.append([f"engine {e.engine} ({where}{run})",
                     f"{speed} over {num(e.busy_s)} s busy, {e.requests:,} requests"])  # fmt: skip
    return rows


def references(s: RunReport) -> Table:
    rows = [
        [e.name, e.benchmark, str(e.n), pct(e.pass_at_1), pct(e.coverage), pct(e.selected), pct(e.selection_loss),
         "—" if e.points_per_doubling is None else f"{e.points_per_doubling:.1f}"]
        for e in s.references.entries
    ]  # fmt: skip
    headers = ["system", "benchmark", "N", "pass@1", "coverage@N", "selected@N", "loss@N", "pts/doubling"]
    return Table("references", s.references.label, headers, rows)


def _interval(b: Point) -> str:
    if b.mean is None:
        return "—"
    if b.lo is None or b.hi is None:
        return f"{b.mean:.3f}"
    return f"{b.mean:.3f} [{b.lo:.3f}, {b.hi:.3f}]"


def calibration(s: RunReport) -> Table | None:
    """Each critic's scores against the grade (None in a report without graded candidates or an old summary)."""
    c = s.calibration
    if not c.critics:
        return None
    rows = [
        [x.name, x.role, f"{x.positives} / {x.n} ({x.tasks} tasks)", _interval(x.auroc), _interval(x.ece),
         _interval(x.brier)]
        for x in c.critics
    ]  # fmt: skip
    rows += [[f"{x.selector}'s comparator", "pairwise", f"{x.decisive} pass/fail pairs of {x.compared} ({x.tasks} tasks)",
              _interval(x.accuracy), "—", "—"] for x in c.comparators]  # fmt: skip
    conf = int(round(100 * s.metrics.confidence))
    notes = [
        f"The run's selectors used {c.used}: {c.why}.",
        *c.notes,
        f"Over the graded candidates a selector could pick; [{conf}% bootstrap over tasks, at most 200 resamples] "
        "(AUROC: the rank statistic of the resampled candidates, docs/estimators.md). ECE over 10 equal-width bins; "
        "AUROC — where one "
        "grade only.",
        *(["A comparator's AUROC is its pairwise accuracy: over the compared pairs of one passing and one failing "
           "candidate, how often it gave the passing one the higher probability (ties half)."] * bool(c.comparators)),
        *(f"{x.selector}'s comparator favoured the candidate shown first by {x.position_bias:+.3f} on average; its two "
          f"orders agreed on {100 * x.consistent:.0f}% of pairs (the tournament averages both orders)."
          for x in c.comparators if x.position_bias is not None and x.consistent is not None),
    ]
    headers = ["critic", "role", "passing / graded", "AUROC", "ECE", "Brier"]
    return Table("calibration", "Critics against the grade", headers, rows, notes)


CAUSE_MEANING = {
    "cut_off": "the reply stopped at model.max_tokens, its continuations too",
    "no_edit_blocks": "no edit blocks and no code block with a definition",
    "malformed_block": "edit blocks that could not be read (a missing separator or REPLACE line)",
    "unknown_file": "the edit names no file of the repository, or several",
    "search_not_found": "the SEARCH text is not in the file",
    "not_applied": "edits refused otherwise (a file to create that exists, code that would not parse)",
    "no_command": "a bash or mini reply without exactly one command",
    "unrecorded": "format_error rollouts recorded before causes were",
}
"""What each ``Endings.by_cause`` key means (docs/agents.md, "Unusable replies")."""


def endings(s: RunReport) -> Table | None:
    """Finished rollouts that ended on a reply their agent could not use, per cause (None without finished ones)."""
    e = s.endings
    if not e.finished:
        return None
    rows = [[cause, str(count), pct(count / e.finished), CAUSE_MEANING.get(cause, "")]
            for cause, count in e.by_cause.items()]  # fmt: skip
    rows.append(["all", str(e.unusable), pct(e.rate), "the unusable-reply rate"])
    notes = [
        f"{e.unusable} of {e.finished} finished rollouts ended on a reply the agent could not use (format_error, or a "
        "limit reached right after such a reply); a reply is continued where it stopped at max_tokens and near-miss "
        'formats are read before it counts here (docs/agents.md, "Unusable replies").'
    ]
    return Table("endings", "Unusable replies (how rollouts ended)", ["cause", "rollouts", "of finished (%)", "meaning"],
                 rows, notes)  # fmt: skip


def budget(s: RunReport) -> Table | None:
    """A batch budget's spending against a uniform split of it (None for a run without a budget)."""
    from agentbon.report.budget import budget_rows

    b = s.budget
    if b is None:
        return None
    notes = [
        f"The curves above use each task's first {b.first} rollouts only (drawn before any outcome was known); "
        "what the allocator added is counted here, never in pass@k.",
        "The uniform split is replayed from this run's rollouts of the lowest indices (no extra compute).",
    ]
    return Table("budget", "Batch budget", ["", "value"], budget_rows(b), notes)


def frontier(s: RunReport) -> Table | None:
    """Staged verification replayed: selected accuracy against verification cost, per policy."""
    f = s.frontier
    if f is None:
        return None
    rows = [
        [p.policy, str(p.tested), num(p.container_s, "s"), pct(p.accuracy),
         f"{p.accuracy_drop_points:+.1f}" if p.accuracy_drop_points else "0",
         "—" if p.throughput is None else f"{p.throughput:.1f}x"]
        for p in f.policies
    ]  # fmt: skip
    a = f.anchor
    notes = [
        "Replayed from this run's records: the critic ranks each task's candidates, the evidence tests run on its top m "
        "only, the winner is the best tested one by evidence then critic. Empty, unappliable and flagged patches are "
        "filtered first at no test cost.",
        f"Critic: {f.critic} (tokens: {f.critic_tokens}). Container-seconds as recorded; a verdict shared with an "
        "identical patch cost nothing.",
        f"Anchor: {a.throughput}x the throughput for {a.accuracy_drop_pct} % less accuracy ({a.what}).",
    ]
    if f.parse_stage:
        notes.insert(1, f"\"parses, then\": a task's candidates whose changed Python files do not all compile "
                     f"({f.unparsed} of {f.candidates} here) are dropped before the critic ranks "
                     "(all kept where none compiles); the check shares the apply's engine call.")
    if f.subset_stage:
        notes.insert(1, f"\"FAIL_TO_PASS first, then\": those evidence tests run first on every candidate, and the "
                     f"{f.subset_dropped} of {f.subset_costed} candidates one failed are dropped (all kept "
                     "where all failed); the cost is the runner's own test times, which the candidate's code could "
                     "misstate.")
    if any(p.policy.endswith(" alone (no tests)") for p in f.policies):
        notes.insert(1, "\"X alone (no tests)\": a selector of this run that reads no test, choosing among all of a "
                     "task's candidates; its accuracy is the exact expectation of its choice, as selected@k at k = n.")
    if left := f.tasks_left_out:
        notes.insert(1, f"Left out of every policy ({len(left)} task(s)): a selection it replays failed on "
                     f"infrastructure ({', '.join(left[:5])}{', …' if len(left) > 5 else ''}); the same command "
                     "selects them again.")
    if f.subset_live:
        notes.insert(1, f"This run verified FAIL_TO_PASS first (verify.fail_to_pass_first): {f.subset_live} "
                     "candidates stopped there without running their PASS_TO_PASS tests, and every policy's "
                     "container-seconds are what the run spent.")
    headers = ["policy", "tested", "container-s", "selected (%)", "points lost", "throughput"]
    if any(p.tokens is not None for p in f.policies):  # a critic that calls a model: what it spent
        headers.append("critic tokens")
        for row, p in zip(rows, f.policies, strict=True):
            row.append("—" if p.tokens is None else f"{p.tokens:,}")
    return Table("frontier", "Staged verification: accuracy against verification cost", headers, rows, notes)


def all_tables(s: RunReport) -> list[Table]:
    """Every table of a report, in reading order."""
    flagged, calibrated, budgeted, staged, ended = flags(s), calibration(s), budget(s), frontier(s), endings(s)
    return [headline(s), *([flagged] if flagged else []), *([budgeted] if budgeted else []), scaling(s),
            selectors(s), selected_by_k(s), *([calibrated] if calibrated else []), *([staged] if staged else []),
            *([ended] if ended else []), cost(s), references(s)]  # fmt: skip
