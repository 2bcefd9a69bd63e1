"""``summary.json`` as a versioned pydantic model: written with ``model_dump_json``, read back with ``model_validate``.

Accuracies are fractions in [0, 1]; ``None`` where a figure is not measured (k above some task's
sample count) or undefined. Slopes (``points_per_doubling``, ``slope``) are in points.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

from agentbon.select.base import Estimator

SUMMARY_SCHEMA = "agentbon.summary"
SUMMARY_VERSION = 7
"""2: typed model; per-k values None where not measured; grade infra errors out of n; early stop; infra.
3: ``flags`` (per kind, per task, flagged winners).
4: ``calibration`` (each critic against the grade, with intervals and the reliability diagram); ``budget``; ``frontier``.
5: a selector's ``estimate`` (its selected@k estimated, with the Monte Carlo standard error).
6: ``majority`` votes inside each k-subset (estimator ``majority``); the oracle's curve among its own candidates.
7: ``endings`` (rollouts that ended on a reply their agent could not use, per cause)."""
READS = (2, 3, 4, 5, 6, 7)
"""Versions :func:`read_summary` reads; older files read with empty ``flags`` / ``calibration`` sections."""


class Part(BaseModel):
    """Base of the summary's parts: unknown keys are an error, so a reader and writer cannot drift apart."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Band(Part):
    """A metric per k (aligned with ``RunReport.ks``) and its bootstrap interval over tasks."""

    mean: list[float | None]
    lo: list[float | None]
    hi: list[float | None]


class Point(Part):
    mean: float | None
    lo: float | None
    hi: float | None


class Estimate(Part):
    """selected@k estimated without bias instead of summed exactly (a softmax on a run too large for the exact sum)."""

    se: list[float | None]
    """Per k, the Monte Carlo standard error of ``selected.mean``; the band already includes this noise."""
    draws: int
    """Draws of each kind (a Gumbel ranking, a uniform subset order) per task."""


class SelectorMetrics(Part):
    estimator: Estimator = "rank"
    """How selected@k reads the selector's scores; each is an exact expectation over k-subsets, unless ``estimate``."""
    estimate: Estimate | None = None
    """Set where selected@k is an unbiased estimate rather than the exact sum (docs/estimators.md)."""
    selected: Band
    loss: Band
    gap_recovered: Band
    winners: int
    winners_resolved: int
    winner_accuracy: float
    """Resolved winners over the tasks not left out."""
    tasks_without_selection: int
    tasks_left_out: dict[str, str] = Field(default_factory=dict)
    """Task id → the error of its latest selection, which failed on infrastructure: out of this selector's curves,
    winners and exports until a resume selects it (docs/failure-taxonomy.md, "Selection")."""


class Metrics(Part):
    confidence: float
    bootstrap: int
    pass_at_1: Point = Field(validation_alias="pass@1", serialization_alias="pass@1")
    coverage: Band
    measured: list[bool]
    """Per k: every task in the curves has at least k samples in its curve sample."""
    curve_tasks: int
    """Tasks in the curves (at least one sample)."""
    tasks_without_sample: list[str] = Field(default_factory=list)
    """Tasks left out of the curves: no rollout finished with a decided grade."""
    fewest_samples: int = 0
    """The smallest curve sample of a task in the curves (the largest measured k is at most this)."""
    selectors: dict[str, SelectorMetrics]
    oracle: dict[str, SelectorMetrics]


class Fit(Part):
    a: float | None
    points_per_doubling: float | None
    lo: float | None
    hi: float | None
    r2: float
    ks: list[int]


class StopCall(Part):
    call: Literal["stops", "pays", "unclear", "too few doublings"]
    from_k: int | None
    """``stops``: the first k from which the slope's interval lies under the threshold; else the last slope's start."""
    slope: float | None
    lo: float | None
    hi: float | None
    threshold_points: float
    min_doublings: int


class Forecast(Part):
    from_k: int
    to_k: int
    fitted_ks: list[int]
    value: float | None
    lo: float | None
    hi: float | None
    gain: float | None
    gain_lo: float | None
    gain_hi: float | None


class Target(Part):
    target: float
    reached_at_k: int | None
    """The first measured k whose value reached the target (then nothing is extrapolated)."""
    extrapolated_k: float | None
    """The k the fit needs, only when the data did not reach the target and the fit gets there beyond them."""


class SeriesScaling(Part):
    measured_ks: list[int]
    gain: list[float | None]
    fit: Fit | None
    stop: StopCall
    forecast: Forecast | None
    targets: list[Target]
    verifier_ceiling_at_k: int | None = None


class Scaling(Part):
    coverage: SeriesScaling
    selectors: dict[str, SeriesScaling]


class RolloutCounts(Part):
    total: int
    valid: int
    """Samples: finished rollouts with a decided (pass or fail) grade."""
    infra_error: int
    """Rollouts that ended in an infrastructure error."""
    grade_infra_error: int
    """Finished rollouts whose grade verification ended in an infrastructure error."""
    ungraded: int
    """Finished rollouts without a grade verdict."""
    cancelled: int
    graded: int
    empty_patch: int
    left_out: int
    """Not in n: infra errors, grade infra errors, ungraded, cancelled."""
    isolation: dict[str, int] = Field(default_factory=dict)
    """Finished rollouts per ``Rollout.isolation``: ``docker``, or weaker (``docker (as root: why)``, the process
    backend's). Empty in files written before it was counted."""


class Endings(Part):
    """Finished rollouts that ended on a reply their agent could not use (``Rollout.unusable``), per cause."""

    finished: int = 0
    """Rollouts that reached an outcome of the model's (not an infrastructure error, not cancelled)."""
    unusable: int = 0
    """Of those, the ones that ended (without submitting) on a reply the agent could not use."""
    rate: float | None = None
    """``unusable / finished``; None without finished rollouts."""
    by_cause: dict[str, int] = Field(default_factory=dict)
    """Cause (an ``UnusableCause``) → rollouts, causes never seen left out; ``unrecorded``: a ``format_error`` rollout
    of a record version that kept no cause."""


class Infra(Part):
    """Infrastructure failures: what is left in the store, and every failed attempt the run logged."""

    rollouts: int
    rollouts_by_kind: dict[str, int]
    verifications: int
    """Grade or evidence verifications whose latest verdict is an infra error."""
    verifications_by_kind: dict[str, int]
    attempts_failed: int
    """``infra`` events: failed attempts, retried or not."""
    attempts_by_kind: dict[str, int]
    attempts_retried: int
    tasks_not_prepared: dict[str, str] = Field(default_factory=dict)
    """Task id → why its environment could not be prepared (retries spent): its rollouts were not run, a resume runs
    them."""
    selections: int = 0
    """Selections (task and selector) whose latest attempt failed on infrastructure: see each selector's
    ``tasks_left_out``."""


class EarlyStopTask(Part):
    task_id: str
    fixed: int
    """Rollouts ``0..fixed-1`` ran regardless: the curve sample of this task."""
    curve_n: int
    rollouts_not_run: int
    est_sandbox_s_saved: float


class EarlyStop(Part):
    tasks: list[EarlyStopTask]
    rollouts_not_run: int
    est_sandbox_s_saved: float


class Flags(Part):
    """What the verifications flagged (docs/security.md, Flags): a rollout counts once per kind, either role."""

    rollouts: int = 0
    """Rollouts with at least one flag."""
    by_kind: dict[str, int] = Field(default_factory=dict)
    """Flag kind → rollouts flagged with it (kinds never seen are left out)."""
    tasks_by_kind: dict[str, int] = Field(default_factory=dict)
    """Flag kind → tasks with at least one rollout flagged with it."""
    per_task: dict[str, dict[str, list[str]]] = Field(default_factory=dict)
    """Task id → flag kind → rollout ids (tasks without a flag are left out)."""
    winners: dict[str, dict[str, list[str]]] = Field(default_factory=dict)
    """Selector (the oracle too) → task id → kinds flagged on its winner, for winners that carry a flag."""
    allowed: list[str] = Field(default_factory=list)
    """The run's ``select.allow_flags``: kinds that kept no candidate from being chosen."""
    fallback: str = "none"
    """The run's ``select.flagged_fallback``."""


class ReliabilityBin(Part):
    lo: float
    hi: float
    count: int
    mean_score: float
    pass_rate: float


Role = Literal["run", "baseline", "out-of-fold"]
"""A critic's place in the calibration: the run's own, the evidence baseline, the classifier fitted out of fold."""


class CriticCalibration(Part):
    """One critic's scores against the grade over the graded candidates (report/calibration.py)."""

    name: str
    role: Role
    n: int
    positives: int
    tasks: int
    auroc: Point
    ece: Point
    brier: Point
    bins: list[ReliabilityBin]


class PairwiseCalibration(Part):
    """A tournament selector's recorded comparisons against the grade (report/calibration.py): over the compared
    pairs of graded candidates where one passes and the other fails, how often the comparator gave the passing one
    the higher probability (ties half): a pairwise AUROC."""

    selector: str
    compared: int
    """Pairs compared whose two candidates have decided grades."""
    decisive: int
    """Of them, the pairs with one passing and one failing candidate (what the accuracy is over)."""
    tasks: int
    accuracy: Point
    """Pairwise accuracy with its bootstrap interval over tasks (None where no pair is decisive)."""
    mean_p: float | None = None
    """The mean probability the comparator gave the passing candidate of a decisive pair."""
    position_bias: float | None = None
    """Over the comparisons asked in both orders, the mean of p(the first better | shown as A) − p(the first better |
    shown as B): how much the model favours position A (0: none; averaging both orders cancels it). None where no
    comparison asked a model."""
    consistent: float | None = None
    """Of those, the share whose two orders agree on which candidate is better (neither at 1/2)."""


class Calibration(Part):
    used: str = ""
    """The critic the run's selectors used."""
    why: str = ""
    critics: list[CriticCalibration] = Field(default_factory=list)
    comparators: list[PairwiseCalibration] = Field(default_factory=list)
    """The tournament selectors' comparators (empty in files written before they existed)."""
    notes: list[str] = Field(default_factory=list)


class MostGiven(Part):
    task_id: str
    rollouts: int
    """Rollouts the allocator added to the task."""


class BudgetPart(Part):
    """A batch budget's spending and its replayed uniform split (report/budget.py)."""

    rollouts: int
    tokens: int | None = None
    first: int
    n: int
    spent: int
    decisions: int
    tasks_given_more: int
    most_given: list[MostGiven] = Field(default_factory=list)
    solved: int
    solved_first: int
    uniform_share: int
    """Rollouts per task of the uniform split: ``budget // tasks``, at most N."""
    uniform_rollouts: int | None = None
    """What the uniform split spends (``uniform_share`` x tasks): its solved per 100 are over these."""
    uniform_solved: int
    uniform_unreplayable: int
    uniform_n_rollouts: int
    saved_vs_uniform_n: int
    solved_per_100: float | None
    uniform_solved_per_100: float | None


class FrontierPolicy(Part):
    policy: str
    tested: int
    """Candidates the evidence tests ran on."""
    container_s: float
    accuracy: float
    throughput: float | None
    """The all-tests cost over this policy's (None where it ran no test)."""
    accuracy_drop_points: float
    tokens: int | None = None
    """Tokens the critic spent ranking this policy's candidates, where it calls a model and recorded them."""


class Anchor(Part):
    """A published figure to compare the frontier with (``frontier.ANCHOR``)."""

    throughput: float
    accuracy_drop_pct: float
    what: str


class Frontier(Part):
    """Staged verification replayed from the run (report/frontier.py)."""

    policies: list[FrontierPolicy]
    critic: str
    critic_tokens: int | str
    anchor: Anchor
    parse_stage: bool = False
    """Whether the run recorded the parse stage, and so the ``parses, then ...`` policies are shown."""
    unparsed: int = 0
    """Graded candidates with a Python file that does not compile."""
    candidates: int = 0
    """Graded candidates the policies choose among."""
    subset_stage: bool = False
    """Whether the run's verdicts give the cost of a FAIL_TO_PASS-first stage (test times recorded), and so the
    ``FAIL_TO_PASS first, then ...`` policies are shown."""
    subset_costed: int = 0
    """Graded candidates whose FAIL_TO_PASS-first cost is known."""
    subset_dropped: int = 0
    """Of those, the ones a FAIL_TO_PASS test failed (dropped by that stage)."""
    subset_live: int = 0
    """Graded candidates whose evidence verification ran that stage itself and stopped after it
    (``verify.fail_to_pass_first``): the run did not run their PASS_TO_PASS tests."""
    tasks: int | None = None
    """Tasks the accuracies are a share of: the run's, less ``tasks_left_out`` (None in summaries before it)."""
    tasks_left_out: list[str] = Field(default_factory=list)
    """Tasks whose critic (or a replayed selector's) selection failed on infrastructure: out of every policy, never
    scored 0 (docs/failure-taxonomy.md, "Selection")."""


Bucket = Literal["resolved", "unresolved", "empty_patch", "error", "incomplete"]
"""A SWE-bench instance's bucket (``swebench.harness.reporting.make_run_report``): a test result (resolved or not),
no patch, no test result (error), or not evaluated yet."""


class HarnessReport(Part):
    """SWE-bench harness report keys (schema_version 2): over tasks at the top of ``RunReport``, over rollout ids in
    its ``rollout_report`` (report/instances.py), over predictions in ``eval_report.json`` (evaluate/report.py)."""

    total_instances: int
    submitted_instances: int
    completed_instances: int
    resolved_instances: int
    unresolved_instances: int
    empty_patch_instances: int
    error_instances: int
    completed_ids: list[str]
    incomplete_ids: list[str]
    empty_patch_ids: list[str]
    submitted_ids: list[str]
    resolved_ids: list[str]
    unresolved_ids: list[str]
    error_ids: list[str]
    schema_version: int

    @classmethod
    def of(cls, total: Collection[str], submitted: Collection[str], buckets: Mapping[str, Bucket]) -> HarnessReport:
        """The keys over the ids of ``total``, each in its bucket (incomplete where it has none): ``completed`` is
        resolved or unresolved; ``submitted`` counts apart, as the harness counts its predictions."""
        ids: dict[str, list[str]] = {b: [] for b in get_args(Bucket)}
        for key in {*total, *buckets}:
            ids[buckets.get(key, "incomplete")].append(key)
        ids = {b: sorted(keys) for b, keys in ids.items()}
        completed = sorted(ids["resolved"] + ids["unresolved"])
        return cls(
            total_instances=len(total), submitted_instances=len(submitted), completed_instances=len(completed),
            resolved_instances=len(ids["resolved"]), unresolved_instances=len(ids["unresolved"]),
            empty_patch_instances=len(ids["empty_patch"]), error_instances=len(ids["error"]),
            completed_ids=completed, incomplete_ids=ids["incomplete"], empty_patch_ids=ids["empty_patch"],
            submitted_ids=sorted(submitted), resolved_ids=ids["resolved"], unresolved_ids=ids["unresolved"],
            error_ids=ids["error"], schema_version=2,
        )  # fmt: skip


CostUnit = Literal["usd", "tokens"]
"""``usd`` where the report's prices are set, else ``tokens`` (report/costs.py)."""


class SelectorCost(Part):
    per_solved_task: float | None
    """The cost at ``Cost.per_solved_k`` over the tasks solved there (None where nothing is measured or solved)."""
    per_extra_point: list[float | None]
    """Per doubling of k, the cost of one more point of selected accuracy (None: the step bought nothing)."""
    judge_tokens: list[float] | None = None
    """Per k, the tokens its judge spends choosing in a k-subset of a task, on average over the tasks in the curves
    (a tournament: its comparisons among the subset's members, which grow as k²); None where it recorded none."""


class Cost(Part):
    """What the rollouts and the selection cost, and what a point costs (report/costs.py)."""

    rollouts: int
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    total_tokens: int
    sandbox_s: float
    verify_evidence_s: float
    verify_grade_s: float
    rollout_wall_p50_s: float
    rollout_wall_p99_s: float
    critical_path_p50_s: float
    critical_path_p99_s: float
    critical_path_max_s: float
    unit: CostUnit
    sample_cost: float | None
    scoring_cost: float | None
    cost_at_k: list[float | None]
    """Per k, best-of-k over the tasks in the curves."""
    cost_tasks: int | None = None
    """Tasks the costs are over (those in the curves; None in summaries before it)."""
    per_solved_k: int | None = None
    """The largest measured k, where a cost per solved task is taken."""
    coverage_per_extra_point: list[float | None]
    selectors: dict[str, SelectorCost]


class Engine(Part):
    """One engine actor of one invocation (``models.actors.engine_time``)."""

    engine: int
    gpus: int
    busy_s: float
    alive_s: float
    requests: int
    completion_tokens: int
    tokens_per_s: float | None
    invocation: int
    """The invocation of the run (0 first, a resume after) whose engine this is."""


class Serving(Part):
    """The model serving's figures over the run's invocations (``model_stats`` and ``launcher`` events)."""

    launcher: str | None
    launcher_reason: str | None = None
    launcher_figures: dict[str, float] | None = None
    source: str | None
    start_s: list[float]
    prefix_cache_queries: int | None
    prefix_cache_hits: int | None
    prefix_cache_hit_rate: float | None
    gpu_s: float | None = None
    """Engine busy seconds x GPUs, over every invocation."""
    gpu_held_s: float | None = None
    """Engine seconds alive x GPUs."""
    engine_busy_s: float | None = None
    engines: list[Engine] = Field(default_factory=list)


class BreakEven(Part):
    """Best-of-N at N against an RL run that reaches the same accuracy at N = 1."""

    n: int
    unit: CostUnit
    extra_cost_per_request: float | None
    training_cost: float | None
    requests: float | None
    """Requests after which the RL run is cheaper (None without ``report.rl_training_cost``)."""


class Theory(Part):
    kl_bound_nats: dict[str, float]
    """k (as text) → the bound on KL(best-of-k ‖ base) in nats."""
    break_even: BreakEven


class Reference(Part):
    """A published best-of-N figure (report/references.py): fractions at ``n`` samples; None where not given."""

    name: str
    benchmark: str
    n: int
    pass_at_1: float | None
    coverage: float | None
    selected: float | None
    selection_loss: float | None
    points_per_doubling: float | None


class References(Part):
    label: str
    entries: list[Reference]


class TaskRow(Part):
    task_id: str
    n: int
    """Samples (finished, grade decided)."""
    curve_n: int
    """Samples in the curves (the fixed part of an early-stopped task)."""
    correct: int
    infra_errors: int
    cells: str
    coverage: list[float | None]
    winners: dict[str, str | None]
    early_stopped: bool = False


class RunHead(Part):
    """The fields ``summary.json`` lists before the harness keys (a base of :class:`RunReport` for that order)."""

    schema_id: str = Field(default=SUMMARY_SCHEMA, alias="schema")
    version: int = SUMMARY_VERSION
    run_id: str
    generated_at: str
    model: str | None
    n: int
    ks: list[int]
    tasks: int
    primary_selector: str | None
    selectors: list[str]
    oracles: list[str]
    rollouts: RolloutCounts
    endings: Endings = Field(default_factory=Endings)
    """Empty in files written before version 7."""
    infra: Infra
    early_stop: EarlyStop
    flags: Flags = Field(default_factory=Flags)
    calibration: Calibration = Field(default_factory=Calibration)
    budget: BudgetPart | None = None
    frontier: Frontier | None = None


class RunReport(HarnessReport, RunHead):
    """Every figure of a run: what ``report.md``, ``report.html`` and the terminal show; at its top level, after the
    head, SWE-bench's keys for the primary selector's winners (a harness report over tasks)."""

    rollout_report: HarnessReport
    """The same keys over rollout ids."""
    metrics: Metrics
    scaling: Scaling
    cost: Cost
    serving: Serving | None
    theory: Theory
    references: References
    per_task: list[TaskRow]

    def to_json(self, indent: int | None = 1) -> str:
        """``summary.json``'s text (keys by alias: ``schema``, ``pass@1``)."""
        return self.model_dump_json(by_alias=True, indent=indent) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready dict with the file's keys."""
        return self.model_dump(mode="json", by_alias=True)


def read_summary(path: Path) -> RunReport:
    """Read a ``summary.json`` back; a file of another schema version says so."""
    from agentbon.errors import ConfigError

    text = Path(path).read_text()
    head = RunReportHead.model_validate_json(text)
    if head.schema_id != SUMMARY_SCHEMA or head.version not in READS:
        raise ConfigError(
            f"{path}: summary {head.schema_id} version {head.version}, this agentbon reads versions "
            f"{', '.join(map(str, READS))}; re-render it with `agentbon report RUN_DIR`"
        )
    return RunReport.model_validate_json(text)


class RunReportHead(BaseModel):
    """The two keys that say which schema a summary follows."""

    schema_id: str = Field(default="", alias="schema")
    version: int = 0
