"""Every record that crosses a process boundary: versioned pydantic models (docs/architecture.md).

Each record carries a format ``version`` so that a run store written by an older agentbon can be
recognised; records are immutable values (copy with ``model_copy(update=...)``).
"""

from __future__ import annotations

import hashlib
import math
import re
import time
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    computed_field,
    field_serializer,
    field_validator,
    model_validator,
)

FORMAT_VERSION = 1


class Record(BaseModel):
    """Base of every record: strict fields, JSON round-trip, a format version."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int = FORMAT_VERSION
    """Format version of this record."""

    @model_validator(mode="before")
    @classmethod
    def _drop_computed(cls, data: object) -> object:
        # Computed fields (``rollout_id``) are written by model_dump; reading them back must not trip extra="forbid".
        computed = cls.model_computed_fields
        if isinstance(data, dict) and computed and any(k in data for k in computed):
            return {k: v for k, v in data.items() if k not in computed}
        return data


def rollout_id_of(task_id: str, index: int) -> str:
    """The deterministic rollout id, ``<task_id>/<i>``."""
    return f"{task_id}/{index}"


# --------------------------------------------------------------------------------------------- tasks

Runner = Literal["pytest", "unittest", "command", "swebench"]
PytestPlugin = Annotated[str, StringConstraints(pattern=r"^(no:)?[A-Za-z_][A-Za-z0-9_.\-]*$")]
"""A pytest plugin as ``-p`` takes it: a module (``pytest_django.plugin``) or, with pytest >= 8.4, an entry-point
name (``django``); ``no:NAME`` keeps one from loading."""


class TestSet(Record):
    """A set of tests in one role (selection evidence or grade), and how to run them."""

    __test__ = False  # not a pytest class

    runner: Runner = "pytest"
    """Which runner script in ``verifiers/`` runs these tests."""
    fail_to_pass: list[str] = Field(default_factory=list)
    """Tests that fail before the fix and must pass after it (test ids as the runner names them)."""
    pass_to_pass: list[str] = Field(default_factory=list)
    """Tests that pass before and must still pass after."""
    command: str | None = None
    """For the ``command`` runner: a shell command run in the repo; exit code 0 means pass."""
    patch: str = ""
    """A diff applied before the run that adds or updates test files (hidden tests in an evaluation)."""
    files: list[str] = Field(default_factory=list)
    """Test files restored to their reference content (base commit + ``patch``) before the run."""
    pytest_plugins: list[PytestPlugin] = Field(default_factory=list)
    """pytest plugins these tests need (``pytest_django.plugin``, ``asyncio``), loaded with ``-p`` although plugin
    autoload stays off. Each is imported before the repository is on ``sys.path``, so a candidate cannot shadow it
    with a module of the same name; a plugin that is the repository's own code stays the candidate's code."""
    pytest_plugin_autoload: bool = False
    """Let pytest load every installed plugin (entry points), as a plain ``pytest`` run does. Off by default: with
    it on, a plugin of the repository under test (an editable install's entry point), whose code the candidate
    controls, runs inside pytest and can forge results; and unrelated plugins of the image (reordering, retrying,
    timeouts) change how tests run. Prefer naming the plugins in ``pytest_plugins``."""
    eval_script: str = ""
    """For the ``swebench`` runner: the SWE-bench harness's evaluation script for this instance (environment
    activation, reset of the test files, test patch, the repository's test command between the harness's markers).
    The evidence set holds a copy that does not apply the test patch (docs/swebench.md)."""
    log_parser: str = ""
    """For the ``swebench`` runner: the harness's log parser (a name in ``swebench``'s ``PARSER_REGISTRY``)."""
    eval_type: str = ""
    """For the ``swebench`` runner: the harness's ``eval_type`` (``pass_and_fail``, the default, or ``fail_only``)."""
    left_out: dict[str, str] = Field(default_factory=dict)
    """Tests of the source's lists left out of this set, each with why (evidence: tests that exist only once the
    grade's test patch is applied)."""
    flaky: dict[str, str] = Field(default_factory=dict)
    """Tests of this set whose outcome differed between runs of one patch in ``agentbon tasks validate``, each with
    what was seen; the suite's ``flaky.json`` fills it when the suite is loaded, and grading treats them by
    ``verify.flaky`` (verify/flaky.py)."""

    @property
    def tests(self) -> list[str]:
        """All test ids in this set, FAIL_TO_PASS first."""
        return [*self.fail_to_pass, *self.pass_to_pass]

    @property
    def empty(self) -> bool:
        """True when there is nothing to run."""
        return not self.tests and not self.command


def is_git_url(source: str) -> bool:
    """Whether a repository source is a git URL (``scheme://...``, or scp-like ``user@host:path``) rather than a local
    path."""
    return "://" in source or re.match(r"^[\w.-]+@[\w.-]+:", source) is not None


class RepoSource(Record):
    """Where a task's repository comes from."""

    url: str
    """A local path (directory, ``.bundle`` file) or a git URL; relative paths are resolved against the task file."""
    base_commit: str
    """The commit the rollouts start from (full or abbreviated sha, or a ref)."""


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
RUNNER_ENV = frozenset(
    {"PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONSTARTUP", "PYTHONINSPECT", "PYTHONBREAKPOINT",
     "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTHONDONTWRITEBYTECODE"}
)  # fmt: skip
"""Variables the verifier sets or drops for the test process (``verifiers/agentbon_supervise.py``)."""


class Environment(Record):
    """How the task image is made from the base image."""

    image: str | None = None
    """A prebuilt image to use as it is when the engine has it (SWE-bench instance image, a team's CI image)."""
    python_packages: list[str] = Field(default_factory=list)
    """pip requirements installed into the task image (needs a reachable index at build time only)."""
    setup: list[str] = Field(default_factory=list)
    """Shell commands run in the repository while building the task image."""
    workdir: str = "/repo"
    """Where the repository lives inside the sandbox."""
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables of every command in the task's sandboxes, the agent's and the tests' alike, and of the
    image's set-up commands (``PYTHONPATH: src`` for a ``src/`` layout that is not installed). Values are literal;
    a relative path is relative to the command's directory, the repository for the agent and the tests."""

    @field_validator("env")
    @classmethod
    def _env_names(cls, env: dict[str, str]) -> dict[str, str]:
        for name, value in env.items():
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(f"environment.env: {name!r} is not a variable name (letters, digits and _)")
            if name in RUNNER_ENV:
                raise ValueError(
                    f"environment.env: {name} is dropped by the verifier before the tests run (it would change the "
                    "runner, docs/security.md); put what it does in the repository's own configuration"
                )
            if "\0" in value:
                raise ValueError(f"environment.env: the value of {name} contains a NUL byte")
        return env


class Task(Record):
    """One repository task: a problem, a repo at a base commit, and tests in two roles (docs/architecture.md)."""

    task_id: str
    """Unique id within a suite; used in rollout ids and paths (letters, digits, ``._-`` and ``__``)."""
    kind: Literal["bugfix", "migration", "swebench"] = "bugfix"
    """What kind of task this is; migrations grade with the same suite that serves as evidence."""
    problem_statement: str
    """What the agent is asked to do."""
    repo: RepoSource
    environment: Environment = Field(default_factory=Environment)
    evidence: TestSet = Field(default_factory=TestSet)
    """Selection evidence: tests a deployed system may legitimately run to choose a winner."""
    grade: TestSet
    """The ground truth: hidden FAIL_TO_PASS + PASS_TO_PASS (or the suite, for migrations)."""
    evidence_is_grade: bool = False
    """True when evidence and grade coincide (migration batches): selection is free, early stop allowed."""
    gold_patch: str | None = None
    """Reference solution, for validation only; never shown to an agent."""
    hints: str = ""
    """Optional hints text (SWE-bench ``hints_text``); shown only when the agent config asks for it."""
    source: str = ""
    """The file this task was loaded from (for error messages)."""
    difficulty: str | None = None
    """Free-form difficulty label (demo suite)."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Free-form facts from the source a runner may need (SWE-bench: ``repo``, ``version``, ``environment_setup_commit``)."""

    @property
    def evidence_tests(self) -> TestSet:
        """The evidence set; the grade set itself when the two coincide."""
        return self.grade if self.evidence_is_grade else self.evidence


class TaskLoadError(Record):
    """A task that could not be loaded: which file, which field, what is wrong."""

    source: str
    field: str
    problem: str
    task_id: str | None = None
    """The record's id (``task_id`` / ``instance_id``) where it has one: a task of the suite that did not load."""

    def __str__(self) -> str:
        return f"{self.source}: {self.field}: {self.problem}"


# ------------------------------------------------------------------------------------------ sandboxes


class ExecResult(Record):
    """A command that ran: failure is data, not an exception (a sandbox that is gone raises)."""

    exit_code: int
    output: str
    """stdout and stderr interleaved, capped (see ``truncated``)."""
    timed_out: bool = False
    truncated: bool = False
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


# ----------------------------------------------------------------------------------------- rollouts


class Usage(Record):
    """Token usage, summed over a rollout's model calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    """Prompt tokens served from the prefix cache, where the server reports them."""
    calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            calls=self.calls + other.calls,
        )


class RolloutSpec(Record):
    """One unit of work: rollout ``index`` of ``task_id`` in ``run_id``."""

    run_id: str
    task_id: str
    index: int
    seed: int
    model: str
    """Model name as the endpoint knows it."""
    agent: str = "bash"
    """Agent type from the config (``bash`` or ``edit``)."""
    attempt: int = 1
    """1 for the first try; raised for each infra retry."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rollout_id(self) -> str:
        return rollout_id_of(self.task_id, self.index)


RolloutStatus = Literal[
    "submitted",  # the agent submitted
    "step_limit",
    "token_limit",
    "time_limit",
    "format_error",  # too many malformed replies
    "agent_error",  # the agent or model failed in a way that is the model's fault (never retried)
    "infra_error",  # sandbox gone, engine unreachable, image build failure, ... (retried within a bound)
    "cancelled",  # early stop or Ctrl-C
]


UnusableCause = Literal[
    "cut_off",  # the reply stopped at max_tokens (after the continuations the agent asks for)
    "no_edit_blocks",  # an edit reply with neither edit blocks nor code blocks with definitions
    "malformed_block",  # edit blocks that could not be read (a missing separator or REPLACE line, no path)
    "unknown_file",  # an edit naming no file of the repository (or several)
    "search_not_found",  # a SEARCH text that is not in the file
    "not_applied",  # edits read and located but refused otherwise (an existing file to create, code that breaks)
    "no_command",  # a bash or mini reply without exactly one command
]
"""Why a rollout ended on a reply its agent could not use (``Rollout.unusable``; docs/agents.md, "Unusable replies")."""


class Timings(Record):
    started_at: float = Field(default_factory=time.time)
    wall_s: float = 0.0
    model_s: float = 0.0
    """Seconds waiting on the model."""
    sandbox_s: float = 0.0
    """Seconds the sandbox existed (container lifetime)."""
    setup_s: float = 0.0
    """Seconds to start the sandbox."""


class SandboxUse(Record):
    """What a rollout's sandbox cost the container engine (docs/sandboxes.md)."""

    engine_calls: int = 0
    """Engine API calls made for this sandbox, its start (ahead of time for a warm one) and removal included."""
    engine_s: float = 0.0
    """Seconds those calls took."""
    warm: bool = False
    """The container was started ahead of need (the warm pool), not while the rollout waited."""
    executor: str = ""
    """``resident`` (one executor process ran every command), else why each command was one engine ``exec``."""
    admission_wait_s: float = 0.0
    """Seconds the start waited for the node's admission control (docs/sandboxes.md, "Admission control")."""
    start_limit: int = 0
    """Sandboxes the node let start at once when this one started (0: not measured, a warm or process sandbox)."""


class Rollout(Record):
    """What one rollout produced."""

    version: int = 2
    """2: ``unusable``."""
    run_id: str
    task_id: str
    index: int
    seed: int = 0
    status: RolloutStatus
    exit_status: str = ""
    """The exception class name or the agent's exit reason (``Submitted``, ``LimitsExceeded``, ...)."""
    patch: str = ""
    """``git diff`` against the base commit, new files included."""
    steps: int = 0
    malformed: int = 0
    """Malformed model replies fed back to the model."""
    unusable: UnusableCause | None = None
    """The rollout ended (without submitting) on a reply its agent could not use: why. None when it did not, and in
    records of version 1, written before it was recorded."""
    usage: Usage = Field(default_factory=Usage)
    timings: Timings = Field(default_factory=Timings)
    error: str | None = None
    traceback: str | None = None
    attempt: int = 1
    isolation: str = "docker"
    """``docker`` or ``process (weaker isolation)``."""
    sandbox: SandboxUse = Field(default_factory=SandboxUse)
    """What the sandbox cost the engine (calls, warm start, executor, admission)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def rollout_id(self) -> str:
        return rollout_id_of(self.task_id, self.index)

    @property
    def finished(self) -> bool:
        """The rollout reached an outcome of the model's (not an infrastructure error, not cancelled): its record is
        final (a resume never runs it again), and it is a sample once its grade is decided (docs/estimators.md)."""
        return self.status not in ("infra_error", "cancelled")


# ----------------------------------------------------------------------------------------- verdicts

TestOutcome = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed", "missing"]
VerdictStatus = Literal["pass", "fail", "undecided", "infra_error"]
Role = Literal["evidence", "grade"]


def normalise_patch(patch: str) -> str:
    """A patch reduced to what it changes: ``index`` lines and trailing whitespace dropped."""
    keep = []
    for line in patch.splitlines():
        if line.startswith("index ") or not line.strip():
            continue
        keep.append(line.rstrip())
    return "\n".join(keep)


def patch_hash(patch: str) -> str:
    """Content hash of a normalised patch (identical patches are verified once)."""
    return hashlib.sha256(normalise_patch(patch).encode()).hexdigest()[:16]


FlagKind = Literal["tampered", "forged", "disagreement", "suspicious_code", "large_file", "binary", "outside_write"]
"""What a verification saw a candidate do that a plain fix does not (docs/security.md):

- ``tampered``: the patch changed test files, conftest, runner configuration or startup hooks (undone before the run);
- ``forged``: the verifier's canary tests did not come out as planted, so the session's results were not the tests'
  own (the verdict fails);
- ``disagreement``: the independent second check of the FAIL_TO_PASS tests disagrees with the first runner;
- ``suspicious_code``: code the patch adds reaches into test-framework internals or exits the process early
  (a flag only, never a verdict by itself);
- ``large_file`` / ``binary``: the patch adds a file over the size limit, or binary content;
- ``outside_write``: the test run changed files outside the repository (the interpreter's site-packages...)."""


class Flag(Record):
    """One thing a verification flagged about a candidate."""

    kind: FlagKind
    detail: str = ""
    """One line saying what was seen (``canary test_a81f… passed but was planted to fail``)."""
    paths: list[str] = Field(default_factory=list)
    """Files it concerns, where it concerns files."""


def error_kind_of(message: str) -> str:
    """The kind at the head of a failure's message (``SandboxGone: the container is gone`` → ``SandboxGone``), or
    ``VerifyInfra`` where there is none (a message the verifier wrote itself)."""
    head, sep, _ = message.partition(": ")
    return head if sep and head.isidentifier() else "VerifyInfra"


class Verdict(Record):
    """The verifier's result for one candidate in one role."""

    run_id: str
    task_id: str
    rollout_id: str
    role: Role
    status: VerdictStatus
    """``pass``/``fail`` decided by tests; ``undecided`` where tests cannot decide; ``infra_error`` apart."""
    patch_applied: bool = True
    timed_out: bool = False
    """The test run went past ``verify.timeout_s`` (``fail``; the SWE-bench harness counts it an error)."""
    tests: dict[str, TestOutcome] = Field(default_factory=dict)
    runner_exit_code: int | None = None
    tampered: list[str] = Field(default_factory=list)
    """Test, conftest or runner-config files the patch touched (undone before the run)."""
    flags: list[Flag] = Field(default_factory=list)
    """Everything the verification flagged (``FlagKind``); a ``tampered`` flag accompanies a non-empty ``tampered``."""
    patch_hash: str = ""
    flaky: dict[str, str] = Field(default_factory=dict)
    """The tests known to be flaky (``TestSet.flaky``) and how this verdict treated each: excluded from the grade,
    or how many of its runs passed (verify/flaky.py)."""
    parses: bool | None = None
    """Whether the Python files the patch adds or changes compile (verify/parsecheck.py): a cheap signal the
    report's frontier replays as a filter, never part of the status. None: not checked or nothing to check."""
    parse_errors: list[str] = Field(default_factory=list)
    """``path:line: message`` of the files that do not compile."""
    test_s: dict[str, float] = Field(default_factory=dict)
    """Seconds each graded test took, from the runner's JUnit XML (written in the sandbox that ran the candidate,
    so only ever used to estimate what running a subset of the tests would cost: the report's frontier, never the
    status). Empty where the runner reports no times (a harness log, a command)."""
    not_run: list[str] = Field(default_factory=list)
    """Graded tests not run because a FAIL_TO_PASS test had already failed (``verify.fail_to_pass_first``): the
    status is ``fail`` whatever they would have done."""
    reason: str = ""
    """One line saying why (``FAIL_TO_PASS tests::test_x failed``, ``patch does not apply``...)."""
    error_kind: str | None = None
    """An ``infra_error``'s kind as the failure taxonomy names it (``SandboxGone``, ``DockerError``; ``VerifyInfra``
    where the verifier itself could not go on: docs/failure-taxonomy.md); None for any other status."""
    duration_s: float = 0.0
    log: str = ""
    """Tail of the runner output."""

    @model_validator(mode="before")
    @classmethod
    def _kind_of_older_infra(cls, data: object) -> object:
        # A verdict of a version that kept the kind only at the head of its reason (``SandboxGone: ...``).
        if isinstance(data, dict) and data.get("status") == "infra_error" and not data.get("error_kind"):
            return {**data, "error_kind": error_kind_of(str(data.get("reason") or ""))}
        return data

    @property
    def resolved(self) -> bool:
        return self.status == "pass"

    @property
    def decided(self) -> bool:
        """The tests decided (pass or fail): not undecided, not an infrastructure error. A finished rollout with a
        decided grade is a sample of the curves (docs/estimators.md)."""
        return self.status in ("pass", "fail")

    @property
    def flag_kinds(self) -> list[str]:
        """The kinds flagged, sorted, without repeats (``tampered`` also where only ``tampered`` paths are set)."""
        kinds = {f.kind for f in self.flags} | ({"tampered"} if self.tampered else set())
        return sorted(kinds)


# ---------------------------------------------------------------------------------------- selection


class Ranked(Record):
    rollout_id: str
    score: float
    """The selector's score; ``-inf`` for a candidate it cannot choose (written as null: JSON has no infinity)."""
    reason: str = ""
    tokens: int | None = None
    """Tokens the critic spent scoring this candidate, where it calls a model and says so (the LLM judge); None
    otherwise (no model, or a run before this was recorded)."""
    scale: dict[str, list[float]] | None = None
    """A scale judge's score distribution (critic/scale.py): per criterion, the probability of each point of its
    1-9 scale; None for other critics."""
    fallback_score: float | None = None
    """Under ``select.flagged_fallback: flagged``, the score of a candidate a blocking flag kept out (its ``score`` is
    ``-inf``), as the selector scores it among the flagged candidates alone: what the fallback chooses by in a
    k-subset that holds no other candidate (docs/estimators.md, "The flagged fallback"). None otherwise."""

    @field_validator("score", mode="before")
    @classmethod
    def _null_is_not_a_candidate(cls, value: object) -> object:
        return -math.inf if value is None else value

    @field_serializer("score", when_used="json")
    def _infinity_as_null(self, value: float) -> float | None:
        return None if value == -math.inf else value


class Comparison(Record):
    """One pairwise comparison of two candidates by a comparator (the tournament selectors' record).

    The comparator is asked in both orders (``first`` shown as A, then ``second`` as A) to cancel position bias;
    ``p_first`` is the mean of the two answers' probability that ``first`` is the better one, rounded to millionths
    (what the tournament and the report read, docs/estimators.md, "tournament")."""

    first: str
    """Rollout id of the candidate the probability is about (the lower rollout index of the two)."""
    second: str
    p_first: float
    """Probability that ``first`` is better: the mean over both orders of asking."""
    p_asked_first: float | None = None
    """That probability when ``first`` was shown as A (None where the comparator does not ask a model)."""
    p_asked_second: float | None = None
    """That probability when ``second`` was shown as A (1 − the answer's p(A))."""
    tokens: int | None = None
    """Tokens both questions spent (prompt and completion, as the server counted them); None without a model."""
    source: str = ""
    """Where the probabilities came from: ``logprobs``, ``parsed`` (an answer without logprobs), ``unparsed``, or
    the comparator's own name where it asks no model."""


INVALID_SENTINEL_V1 = -1.0
"""The score version 1 of a Selection gave a candidate that cannot be chosen (no real score was negative then)."""


class Selection(Record):
    """A selector's choice for one task: the winner and why."""

    version: int = 2
    """2: a candidate the selector cannot choose scores ``-inf`` (null in JSON); 1 wrote -1.0, read as ``-inf``."""
    run_id: str
    task_id: str
    selector: str
    winner: str | None
    """The winning rollout id, or None when there was no candidate."""
    ranked: list[Ranked] = Field(default_factory=list)
    reason: str = ""
    oracle: bool = False
    """True when the grading tests chose: reported as the oracle, never as a selector."""
    comparisons: list[Comparison] = Field(default_factory=list)
    """A tournament selector's pairwise comparisons, each pair once (the report reads them on every k-subset)."""

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: object) -> object:
        if not isinstance(data, dict) or int(data.get("version", 2)) >= 2:  # a record on disk always has one
            return data
        ranked = [
            {**r, "score": -math.inf} if isinstance(r, dict) and r.get("score") == INVALID_SENTINEL_V1 else r
            for r in data.get("ranked") or []
        ]
        return {**data, "version": 2, "ranked": ranked}
