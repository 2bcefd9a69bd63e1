"""The report's tables, built once from ``summary.json`` and rendered by the terminal, Markdown and HTML writers."""

from __future__ import annotations

from dataclasses import dataclass, field


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


def band(b: dict, i: int) -> str:
    return f"{pct(b['mean'][i])} [{pct(b['lo'][i])}, {pct(b['hi'][i])}]"


def num(x: float | None, unit: str = "") -> str:
    if x is None:
        return "—"
    text = f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.3g}"
    return f"{text} {unit}".rstrip()


def headline(s: dict) -> Table:
    m, ks, last = s["metrics"], s["ks"], len(s["ks"]) - 1
    r = s["rollouts"]
    rows = [
        ["tasks", str(s["tasks"])],
        ["rollouts per task (N)", str(s["n"])],
        ["rollouts: valid / infra error / cancelled", f"{r['valid']} / {r['infra_error']} / {r['cancelled']}"],
        ["pass@1", band({k: [v] for k, v in m["pass@1"].items()}, 0)],
        [f"coverage@{ks[last]} (pass@{ks[last]})", band(m["coverage"], last)],
    ]
    primary = s.get("primary_selector")
    if primary:
        p = m["selectors"][primary]
        rows += [
            [f"selected@{ks[last]} ({primary})", band(p["selected"], last)],
            [f"selection loss@{ks[last]}", band(p["loss"], last)],
            [f"gap recovered@{ks[last]}", band(p["gap_recovered"], last)],
            ["winners resolved (SWE-bench keys)", f"{s['resolved_instances']} / {s['total_instances']}"],
        ]
    conf = int(round(100 * m["confidence"]))
    notes = [f"Accuracies in points; brackets: {conf}% bootstrap interval over tasks ({m['bootstrap']} resamples)."]
    if r["infra_error"]:
        notes.append(f"{r['infra_error']} rollouts hit infrastructure errors: left out of n, listed in error_ids.")
    return Table("headline", "Headline", ["", "value"], rows, notes)


def selectors(s: dict) -> Table:
    m, sc, last = s["metrics"], s["scaling"], len(s["ks"]) - 1
    k = s["ks"][last]
    rows = []
    for name in s["selectors"]:
        b, f = m["selectors"][name], sc["selectors"][name]
        rows.append([
            name, band(b["selected"], last), pct(b["loss"]["mean"][last]), pct(b["gap_recovered"]["mean"][last], 0) + "%",
            f"{b['winners_resolved']} / {s['tasks']}", f"{f['fit']['points_per_doubling']:+.1f}",
            str(f["stops_paying_at_k"] or "—"), str(f["verifier_ceiling_at_k"] or "—"),
        ])  # fmt: skip
    for name in s["oracles"]:
        b = m["oracle"][name]
        rows.append([f"{name} (oracle: grading tests)", band(b["selected"], last), "—", "—",
                     f"{b['winners_resolved']} / {s['tasks']}", "—", "—", "—"])  # fmt: skip
    headers = [
        "selector", f"selected@{k}", f"loss@{k}", "gap recovered", "winners resolved", "pts/doubling",
        "doubling < 1 pt from k", "verifier ceiling from k",
    ]  # fmt: skip
    notes = (
        ["The oracle picks with the grading tests: an upper bound (= coverage), never a selector."]
        if s["oracles"]
        else []
    )
    return Table("selectors", f"Selectors at k = {k}", headers, rows, notes)


def scaling(s: dict) -> Table:
    """The decision table: what each doubling of N buys, for coverage and the primary selector."""
    ks, m, sc, cost = s["ks"], s["metrics"], s["scaling"], s["cost"]
    primary = s.get("primary_selector")
    p = m["selectors"].get(primary or "", None)
    kl = s["theory"]["kl_bound_nats"]
    rows = []
    for i, k in enumerate(ks):
        row = [str(k), band(m["coverage"], i), gain(sc["coverage"]["gain"][i - 1]) if i else ""]
        if p:
            g = sc["selectors"][primary]["gain"]
            row += [band(p["selected"], i), gain(g[i - 1]) if i else "", pct(p["loss"]["mean"][i])]
        row += [f"{kl.get(str(k), 0.0):.2f}", num(cost["cost_at_k"][i], cost["unit"])]
        rows.append(row)
    headers = ["k", "coverage@k", "Δ/doubling"]
    if p:
        headers += [f"selected@k ({primary})", "Δ/doubling", "loss@k"]
    headers += ["KL bound (nats)", "cost"]
    notes = _scaling_notes(s, primary)
    return Table("scaling", "What each doubling of N buys", headers, rows, notes)


def _scaling_notes(s: dict, primary: str | None) -> list[str]:
    sc = s["scaling"]
    cov = sc["coverage"]
    notes = [
        f"coverage ≈ {pct(cov['fit']['a'])} + {cov['fit']['points_per_doubling']:.1f}·log2 k "
        f"(R² {cov['fit']['r2']:.2f}); doubling buys < 1 point of coverage from k = {cov['stops_paying_at_k'] or '— (never)'}."
    ]  # fmt: skip
    if primary:
        p = sc["selectors"][primary]
        notes.append(
            f"selected ({primary}) ≈ {pct(p['fit']['a'])} + {p['fit']['points_per_doubling']:.1f}·log2 k "
            f"(R² {p['fit']['r2']:.2f}); doubling buys < 1 point from k = {p['stops_paying_at_k'] or '— (never)'}."
        )
        targets = ", ".join(f"{pct(float(t))}% needs k ≈ {num(k)}" for t, k in p["fit"]["k_for"].items())
        if targets:
            notes.append(f"Extrapolated from the fit ({primary}): {targets}.")
        if p["verifier_ceiling_at_k"]:
            notes.append(
                f"⚠ Verifier-shaped ceiling: from k = {p['verifier_ceiling_at_k']} selected accuracy flattens "
                "(< 1 point per doubling) while coverage still rises — more samples find fixes the selector cannot pick."
            )
    be = s["theory"]["break_even"]
    line = f"BoN at N = {be['n']} pays {num(be['extra_cost_per_request'], be['unit'])} extra per request"
    if be["requests"] is not None:
        line += f"; an RL run costing {num(be['training_cost'], be['unit'])} breaks even after {num(be['requests'])} requests"
    else:
        line += " (set report.rl_training_cost for the RL break-even: training cost / extra cost per request)"
    notes.append(line + ". KL(BoN‖base) ≤ log N − (N−1)/N.")
    return notes


def selected_by_k(s: dict) -> Table:
    names = [*s["selectors"], *s["oracles"]]
    rows = []
    for i, k in enumerate(s["ks"]):
        row = [str(k), pct(s["metrics"]["coverage"]["mean"][i])]
        for name in names:
            block = s["metrics"]["selectors"].get(name) or s["metrics"]["oracle"][name]
            row.append(pct(block["selected"]["mean"][i]))
        rows.append(row)
    headers = ["k", "coverage", *s["selectors"], *(o if "oracle" in o else f"{o} (oracle)" for o in s["oracles"])]
    return Table("selected_by_k", "selected@k by selector", headers, rows)


def cost(s: dict) -> Table:
    c, unit = s["cost"], s["cost"]["unit"]
    rows = [
        ["tokens: prompt / completion / cached", f"{c['prompt_tokens']:,} / {c['completion_tokens']:,} / {c['cached_tokens']:,}"],
        ["sandbox-seconds (rollouts)", num(c["sandbox_s"])],
        ["verification seconds: evidence / grade", f"{num(c['verify_evidence_s'])} / {num(c['verify_grade_s'])}"],
        ["rollout wall clock p50 / p99", f"{num(c['rollout_wall_p50_s'])} s / {num(c['rollout_wall_p99_s'])} s"],
        ["task critical path (slowest rollout) p50 / p99 / max",
         f"{num(c['critical_path_p50_s'])} s / {num(c['critical_path_p99_s'])} s / {num(c['critical_path_max_s'])} s"],
        ["cost per rollout / per scoring", f"{num(c['sample_cost'], unit)} / {num(c['scoring_cost'], unit)}"],
    ]  # fmt: skip
    serving = s.get("serving") or {}
    if serving.get("prefix_cache_hit_rate") is not None:
        hits, queries = serving["prefix_cache_hits"], serving["prefix_cache_queries"]
        rows.append(["prefix-cache hit rate (tokens)", f"{pct(serving['prefix_cache_hit_rate'])}% of {queries:,} prompt tokens ({hits:,} hits)"])
    for name, sel in c["selectors"].items():
        rows.append([f"cost per solved task ({name})", num(sel["per_solved_task"], unit)])
        marginal = ", ".join(num(x) for x in sel["per_extra_point"])
        rows.append([f"cost per extra point, each doubling ({name})", f"{marginal} {unit}"])
    return Table("cost", "Cost", ["", "value"], rows, [f"Unit: {unit}."])


def references(s: dict) -> Table:
    rows = [
        [e["name"], e["benchmark"], str(e["n"]), pct(e["pass_at_1"]), pct(e["coverage"]), pct(e["selected"]),
         pct(e["selection_loss"]), "—" if e["points_per_doubling"] is None else f"{e['points_per_doubling']:.1f}"]
        for e in s["references"]["entries"]
    ]  # fmt: skip
    headers = ["system", "benchmark", "N", "pass@1", "coverage@N", "selected@N", "loss@N", "pts/doubling"]
    return Table("references", s["references"]["label"], headers, rows)


def all_tables(s: dict) -> list[Table]:
    """Every table of a report, in reading order."""
    return [headline(s), scaling(s), selectors(s), selected_by_k(s), cost(s), references(s)]
