"""The run store as per-task arrays: what every metric and rendering reads (nothing is re-run).

Rules (docs/estimators.md, section 1): a sample is a rollout that finished (not ``infra_error``,
not ``cancelled``) and whose grade verdict decided (``pass`` or ``fail``); a rollout whose grade ended
in ``infra_error`` or is missing is left out of n exactly like an infra error, and counted apart. A
task that early stop cut short draws its curves from its rollouts ``0..fixed-1`` only (the part fixed
in advance); its later rollouts stay candidates for the winners. A selector's scores come from its
Selection's ``ranked`` list, a valid candidate missing from that list ranks below every scored one,
and a task the selector made no choice on counts as unsolved for it, unless its latest selection failed on
infrastructure (a critic's server down): then the task is left out of that selector's figures and winners (``left_out``),
never scored 0, until a resume selects it (docs/failure-taxonomy.md, "Selection"). Oracle selections
(``oracle=True``) are kept apart from the selectors. Under a batch budget every task's curves come from its first
allotment (``budget_first``), drawn before any outcome was known; what the allocator added is reported apart. The
tasks are the run's latest invocation's (``RunStore.tasks``): records of tasks a resume left out are not read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from agentbon.config import RunConfig
from agentbon.metrics.tournament import UNIT, UNSEEN, units
from agentbon.orchestrate.events import EarlyStop, Infra
from agentbon.protocols import Candidate
from agentbon.select.base import blocking_flags, invalid_reason
from agentbon.store import RunStore
from agentbon.types import Rollout, Selection, Task, TestSet, Verdict, patch_hash

# Cell codes of the task-by-rollout pass map.
MISSING, PASS, FAIL, UNGRADED, INFRA, CANCELLED, GRADE_INFRA = 0, 1, 2, 3, 4, 5, 6
CELL_CODES = ".PFUICG"
"""One letter per cell code, as ``summary.json`` writes a task's row: ``PFFI`` = pass, fail, fail, infra error
(``U``: no grade verdict, ``G``: the grade verification ended in an infra error; neither is in n)."""
@dataclass
class EarlyStopped:
    """Early stop's record of one task: the fixed part its curves use and the compute it saved."""

    fixed: int
    rollouts_not_run: int
    est_sandbox_s_saved: float


def early_stops(events: list[EarlyStop], config: RunConfig) -> dict[str, EarlyStopped]:
    """Fold ``early_stop`` events by task; ``fixed`` from the event, else the run's ``early_stop_fixed``."""
    fallback = config.early_stop_fixed
    out: dict[str, EarlyStopped] = {}
    for e in events:
        fixed = e.fixed or fallback
        seen = out.get(e.task_id)
        out[e.task_id] = EarlyStopped(
            fixed=min(fixed, seen.fixed) if seen else fixed,
            rollouts_not_run=e.rollouts_not_run + (seen.rollouts_not_run if seen else 0),
            est_sandbox_s_saved=e.est_sandbox_s_saved + (seen.est_sandbox_s_saved if seen else 0),
        )
    return out


@dataclass
class RunData:
    """One run as arrays of shape ``(tasks, n)``, indexed by task row and rollout index."""

    run_id: str
    task_ids: list[str]
    n: int
    config: RunConfig
    """The run's settings as recorded (defaults for a run that recorded none)."""
    tasks: dict[str, Task]
    rollouts: dict[str, Rollout]
    grades: dict[str, Verdict]
    evidence: dict[str, Verdict]
    present: np.ndarray
    valid: np.ndarray
    correct: np.ndarray
    cells: np.ndarray
    """Pass-map code per cell: MISSING, PASS, FAIL, UNGRADED, INFRA, CANCELLED, GRADE_INFRA."""
    curve: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))
    """The samples the curves use: ``valid``, less the rollouts past the fixed part of an early-stopped task."""
    candidate: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))
    """Samples a selector could pick (not an empty patch, not a patch that does not apply, no evidence flag outside
    ``select.allow_flags``): the selectors' rule."""
    oracle_candidate: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))
    """As ``candidate`` with flags left aside: the oracle's rule (it ranks by grade alone)."""
    fallback: np.ndarray | None = None
    """Under ``select.flagged_fallback: flagged``, the flagged candidates (``oracle_candidate`` less ``candidate``): a
    selector chooses among them in a k-subset that holds no candidate (metrics/fallback.py); None otherwise."""
    evidence_pass: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))
    """Cells whose evidence verdict passed (the baseline a critic has to beat, report/calibration.py)."""
    evidence_s: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    """Seconds each cell's evidence verification took (0 where it shared an identical patch's verdict)."""
    unparsed: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))
    """Cells whose verification found a Python file of the patch that does not compile (``Verdict.parses``)."""
    parse_checked: bool = False
    """Whether any verdict of the run recorded the parse stage (runs before it have none)."""
    subset_s: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    """Seconds the evidence's FAIL_TO_PASS tests alone would have taken in each cell's verification: its fixed part
    (the verification's seconds less its tests' own) plus those tests' own (``Verdict.test_s``); 0 where unknown."""
    subset_fail: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))
    """Cells with a FAIL_TO_PASS evidence test that did not pass (flaky ones aside): the subset stage drops them."""
    subset_known: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))
    """Cells that have that stage: their evidence has FAIL_TO_PASS and PASS_TO_PASS tests and recorded times."""
    subset_checked: bool = False
    """Whether any cell has that stage (``subset_known``)."""
    subset_live: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))
    """Cells whose evidence verification ran that stage itself and stopped after it (``verify.fail_to_pass_first``;
    ``Verdict.not_run``): their seconds are already the stage's."""
    budget_first: int | None = None
    """A budget run's first allotment per task, the part its curves use (``RunConfig.fixed_part()``); None without
    a budget."""
    early_stop: dict[str, EarlyStopped] = field(default_factory=dict)
    """Task id → what early stop did to it (tasks it never stopped are absent)."""
    infra_events: list[Infra] = field(default_factory=list)
    """The run's ``infra`` events (every failed attempt, retried or not)."""
    clusters: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    """Per cell, the task's cluster of identical normalised patches (``patch_hash``) as a number, NaN where there is
    no rollout: what ``majority`` votes with inside each k-subset (docs/estimators.md, section 4)."""
    left_out: dict[str, dict[str, str]] = field(default_factory=dict)
    """Selector → task id → the error of its latest selection there, which failed on infrastructure: the task is out
    of that selector's curves, winners and exports (its earlier selection, if any, no longer stands)."""
    unprepared: dict[str, str] = field(default_factory=dict)
    """Task id → why its environment could not be prepared last (its rollouts were not run; a resume runs them)."""
    scores: dict[str, np.ndarray] = field(default_factory=dict)
    """Per selector, scores with NaN where a cell is not a valid candidate (rows of unselected tasks all NaN)."""
    comparisons: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    """Per tournament selector (``Selection.comparisons``), per task row, its (n, n) pairwise comparisons in
    millionths: ``[i, j]`` the probability that rollout i is better than rollout j, ``-1`` where the pair was not
    compared (metrics/tournament.py)."""
    comparison_tokens: dict[str, np.ndarray] = field(default_factory=dict)
    """Per tournament selector, per task row, the tokens its comparisons spent (a row without any recorded: 0);
    absent for a selector whose comparisons recorded no tokens (a comparator that asks no model)."""
    pair_tokens: dict[str, dict[int, np.ndarray]] = field(default_factory=dict)
    """Per tournament selector that recorded tokens, per task row, the (n, n) tokens of each pair's comparison
    (symmetric, 0 where none): what a k-subset's tournament spends (report/costs.py)."""
    critic_tokens: np.ndarray | None = None
    """Tokens the run's critic spent scoring each cell, where it calls a model and recorded them (``Ranked.tokens``,
    the ``critic`` selector's); None otherwise."""
    oracle_scores: dict[str, np.ndarray] = field(default_factory=dict)
    selections: dict[str, dict[str, Selection]] = field(default_factory=dict)
    """Selector name → task id → Selection (oracles included)."""
    oracles: list[str] = field(default_factory=list)
    selectors: list[str] = field(default_factory=list)
    """Non-oracle selectors, in the config's order, then by name."""
    path: Path | None = None
    """The run's directory (None for data built without a store)."""

    def left_out_rows(self, *selectors: str) -> np.ndarray:
        """Per task row, whether the latest selection of any of ``selectors`` there failed on infrastructure
        (``left_out``): the row is out of every figure that reads those selectors, never scored 0 (the one rule for
        the curves, the frontier and the calibration; docs/failure-taxonomy.md, "Selection")."""
        out = np.zeros(len(self.task_ids), bool)
        row = {t: i for i, t in enumerate(self.task_ids)}
        for name in selectors:
            out[[row[t] for t in self.left_out.get(name, {}) if t in row]] = True
        return out

    @property
    def primary(self) -> str | None:
        """The selector whose winners are exported: the config's first that has selections."""
        return self.selectors[0] if self.selectors else None


def _task_order(tasks: list[Task], rollouts: dict[str, Rollout], selections: list[Selection]) -> list[str]:
    order = [t.task_id for t in tasks]
    seen = set(order)
    extra = {r.task_id for r in rollouts.values()} | {s.task_id for s in selections}
    return order + sorted(extra - seen)


def _selector_order(configured: list[str], names: set[str]) -> list[str]:
    return [s for s in configured if s in names] + sorted(names - set(configured))


def subset_stage(tests: TestSet, verdict: Verdict) -> tuple[float, bool] | None:
    """What the FAIL_TO_PASS tests of the evidence, run alone first, would have cost and found for this verdict:
    (seconds, whether one of them did not pass). None where there is no such stage: no PASS_TO_PASS tests (the
    subset is the whole), no FAIL_TO_PASS tests, or no times recorded. Tests treated as flaky are left out."""
    f2p = [t for t in tests.fail_to_pass if t not in verdict.flaky]
    if not f2p or not tests.pass_to_pass or not verdict.test_s:
        return None
    own = sum(verdict.test_s.values())
    fixed = max(verdict.duration_s - own, 0.0)
    seconds = min(fixed + sum(verdict.test_s.get(t, 0.0) for t in f2p), verdict.duration_s)
    failed = any(verdict.tests.get(t) != "passed" for t in f2p)  # as grading decides (verify/grading.py)
    return seconds, failed


def load_run(store: RunStore) -> RunData:
    """Read tasks, rollouts, verdicts and selections from ``store`` into arrays."""
    recorded = store.config()
    config = recorded or RunConfig.read({})
    tasks, rollouts = store.tasks(), store.rollouts()
    grades, evidence = store.verdicts("grade"), store.verdicts("evidence")
    failed, selections = store.selector_failures(), store.standing_selections()
    infra_events = store.recorded(Infra)
    unprepared = {t: f"{e.error}: {e.message}" for t, e in store.prepare_failures().items()}
    if store.current_task_ids() is not None:  # a resume left some tasks out: their records stay, out of the report
        ids = {t.task_id for t in tasks}
        rollouts = {rid: r for rid, r in rollouts.items() if r.task_id in ids}
        grades = {rid: v for rid, v in grades.items() if v.task_id in ids}
        evidence = {rid: v for rid, v in evidence.items() if v.task_id in ids}
        selections = [s for s in selections if s.task_id in ids]
        infra_events = [e for e in infra_events if e.task_id in ids]
        failed = {key: e for key, e in failed.items() if key[0] in ids}
        unprepared = {t: why for t, why in unprepared.items() if t in ids}
    left_out: dict[str, dict[str, str]] = {}
    for (task_id, selector), e in failed.items():
        left_out.setdefault(selector, {})[task_id] = e.error
    task_ids = _task_order(tasks, rollouts, selections)
    row = {t: i for i, t in enumerate(task_ids)}
    n = max([recorded.n if recorded else 0, *(r.index + 1 for r in rollouts.values())] or [0])
    shape = (len(task_ids), n)
    data = RunData(
        run_id=store.run_id, task_ids=task_ids, n=n, config=config, tasks={t.task_id: t for t in tasks},
        rollouts=rollouts, grades=grades, evidence=evidence, present=np.zeros(shape, bool), valid=np.zeros(shape, bool),
        correct=np.zeros(shape), cells=np.full(shape, MISSING, dtype=np.int8), candidate=np.zeros(shape, bool),
        oracle_candidate=np.zeros(shape, bool), evidence_pass=np.zeros(shape, bool), evidence_s=np.zeros(shape),
        unparsed=np.zeros(shape, bool), subset_s=np.zeros(shape), subset_fail=np.zeros(shape, bool),
        subset_known=np.zeros(shape, bool), subset_live=np.zeros(shape, bool), clusters=np.full(shape, np.nan),
        infra_events=infra_events, left_out=left_out, unprepared=unprepared, path=store.path,
    )  # fmt: skip
    _fill_cells(data, row)
    if config.select.flagged_fallback == "flagged":
        data.fallback = data.oracle_candidate & ~data.candidate
    stopped = early_stops(store.recorded(EarlyStop), config)
    data.early_stop = {t: s for t, s in stopped.items() if t in row}
    data.curve = data.valid.copy()
    for task_id, stop in data.early_stop.items():
        data.curve[row[task_id], stop.fixed :] = False
    data.budget_first = config.fixed_part() if config.budget else None
    if data.budget_first is not None:  # under a batch budget every task's curves come from its first allotment
        data.curve[:, data.budget_first :] = False
    by_selector: dict[str, dict[str, Selection]] = {}
    for s in selections:
        by_selector.setdefault(s.selector, {})[s.task_id] = s
    data.selections = by_selector
    oracle_names = {name for name, sel in by_selector.items() if any(s.oracle for s in sel.values())}
    data.oracles = sorted(oracle_names)
    configured = recorded.select.selectors if recorded else []
    data.selectors = _selector_order(configured, (set(by_selector) | set(left_out)) - oracle_names)
    for name in set(left_out) - set(by_selector):  # every task's selection failed: no scores, all left out
        by_selector[name] = {}
    for name, per_task in by_selector.items():
        target = data.oracle_scores if name in oracle_names else data.scores
        target[name] = _scores(data, per_task, row)
    data.critic_tokens = _critic_tokens(data, by_selector.get("critic", {}), row)
    for name, per_task in by_selector.items():
        if any(s.comparisons for s in per_task.values()):
            _comparisons(data, name, per_task, row)
    return data


def _comparisons(data: RunData, name: str, per_task: dict[str, Selection], row: dict[str, int]) -> None:
    """A tournament selector's recorded comparisons as per-row matrices, and the tokens they spent."""
    matrices: dict[int, np.ndarray] = {}
    pairs: dict[int, np.ndarray] = {}
    tokens = np.zeros(len(data.task_ids))
    counted = False
    for task_id, selection in per_task.items():
        i = row[task_id]
        q = np.full((data.n, data.n), UNSEEN, np.int64)
        spent = np.zeros((data.n, data.n))
        for c in selection.comparisons:
            a, b = _index(c.first, task_id, data.n), _index(c.second, task_id, data.n)
            if a is None or b is None or a == b:
                continue
            p = units(c.p_first)
            q[a, b], q[b, a] = p, UNIT - p
            if c.tokens is not None:
                tokens[i] += c.tokens
                spent[a, b] = spent[b, a] = c.tokens
                counted = True
        matrices[i], pairs[i] = q, spent
    data.comparisons[name] = matrices
    if counted:
        data.comparison_tokens[name], data.pair_tokens[name] = tokens, pairs


def _index(rollout_id: str, task_id: str, n: int) -> int | None:
    """The rollout index of ``rollout_id`` where it is one of ``task_id``'s within n, else None."""
    task, _, index = rollout_id.rpartition("/")
    return int(index) if task == task_id and index.isdigit() and int(index) < n else None


def _fill_cells(data: RunData, row: dict[str, int]) -> None:
    """Each rollout's cell: its pass-map code, whether it is a sample (finished, grade decided) and a candidate, its
    patch's cluster, and what its evidence verification found and cost."""
    allowed = list(data.config.select.allow_flags)
    cluster_of: list[dict[str, int]] = [{} for _ in data.task_ids]
    for rid, r in data.rollouts.items():
        i, j = row[r.task_id], r.index
        data.present[i, j] = True
        data.clusters[i, j] = cluster_of[i].setdefault(patch_hash(r.patch), len(cluster_of[i]))
        if not r.finished:  # not a sample: its outcome is unknown
            data.cells[i, j] = INFRA if r.status == "infra_error" else CANCELLED
            continue
        verdict = data.grades.get(rid)
        status = verdict.status if verdict else None
        data.cells[i, j] = {"pass": PASS, "fail": FAIL, "infra_error": GRADE_INFRA}.get(status or "", UNGRADED)
        # An undecided grade is no sample: left out of n, counted apart.
        data.valid[i, j] = verdict is not None and verdict.decided
        data.correct[i, j] = 1.0 if status == "pass" else 0.0
        seen = Candidate(rollout=r, evidence=data.evidence.get(rid))
        data.evidence_pass[i, j] = seen.evidence is not None and seen.evidence.status == "pass"
        data.evidence_s[i, j] = seen.evidence.duration_s if seen.evidence is not None else 0.0
        parses = next((v.parses for v in (seen.evidence, verdict) if v is not None and v.parses is not None), None)
        data.unparsed[i, j] = parses is False
        data.parse_checked = data.parse_checked or parses is not None
        if seen.evidence is not None and r.task_id in data.tasks:
            subset = subset_stage(data.tasks[r.task_id].evidence_tests, seen.evidence)
            if subset is not None:
                data.subset_s[i, j], data.subset_fail[i, j] = subset
                data.subset_known[i, j] = True
            data.subset_live[i, j] = bool(seen.evidence.not_run)
        data.oracle_candidate[i, j] = invalid_reason(seen) is None
        data.candidate[i, j] = data.oracle_candidate[i, j] and not blocking_flags(seen, allowed)
    data.subset_checked = bool(data.subset_known.any())


def _critic_tokens(data: RunData, per_task: dict[str, Selection], row: dict[str, int]) -> np.ndarray | None:
    """Tokens the ``critic`` selector's critic spent on each cell (``Ranked.tokens``); None where it recorded none
    (a critic that calls no model, or a run before they were recorded)."""
    tokens = np.zeros(data.valid.shape)
    seen = False
    for task_id, selection in per_task.items():
        for ranked in selection.ranked:
            task, _, index = ranked.rollout_id.rpartition("/")
            if ranked.tokens is not None and task == task_id and index.isdigit() and int(index) < data.n:
                tokens[row[task_id], int(index)] = ranked.tokens
                seen = True
    return tokens if seen else None


def _scores(data: RunData, per_task: dict[str, Selection], row: dict[str, int]) -> np.ndarray:
    scores = np.full(data.valid.shape, np.nan)
    for task_id, selection in per_task.items():
        i = row[task_id]
        scores[i] = np.where(data.valid[i], -np.inf, np.nan)  # valid but unranked: below every scored one
        for ranked in selection.ranked:
            task, _, index = ranked.rollout_id.rpartition("/")
            if task == task_id and index.isdigit() and int(index) < data.n and data.valid[i, int(index)]:
                # A flagged candidate's score where the fallback chooses (it is out of the other candidates' choice).
                score = ranked.score if ranked.score > -np.inf or ranked.fallback_score is None else (
                    ranked.fallback_score
                )
                scores[i, int(index)] = -np.inf if np.isnan(score) else score
    return scores
