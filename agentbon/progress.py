"""Run progress: a state fed by the driver's events, shown as a rich Live panel or as plain log lines.

The display is called with every event the run's one ``Recorder`` sends (``agentbon.orchestrate.events``: the
plan, units started, rollouts and verdicts saved, infra failures, early stops, tokens, the server choice, ticks,
interrupts) and matches on its class; the state keeps the counts and the display only renders them
(docs/architecture.md, "Events: one recorder").
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table

from agentbon.console import make_console
from agentbon.models.choice import Choice
from agentbon.orchestrate import events as ev

SLOW_AFTER_S = 300.0
"""The model server's rate is judged once the first unit has run this long (and the server's own count, where it
exports one, spans at least ``RATE_SPAN_S``). Where the server exports no count (llama.cpp), the rate is that of the
finished calls since the first unit started, and the first calls' long shared prompt comes first: on two AVX2 cores
the demo's first two calls end after about three minutes, so judging at two minutes called a healthy server slow.
Before any call has finished there is no rate at all (a loaded machine stretched the first calls past five minutes
and "0.0 tokens/s" was a false alarm): then only ``SLOW_FACTOR`` times as long with nothing finished is slow."""
RATE_SPAN_S = 45.0
SLOW_FACTOR = 4.0
"""The server is called slow below 1/``SLOW_FACTOR`` of the rate expected of it on this machine."""


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "--:--"
    s = int(seconds)
    return f"{s // 3600:d}:{s % 3600 // 60:02d}:{s % 60:02d}"


class ProgressState:
    """The counts a run's progress shows, updated from the driver's events."""

    def __init__(self, run_id: str = "", clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.run_id, self.t0 = run_id, clock()
        self.tasks = self.n = self.planned = self.verify_total = 0
        self.rollouts_done = self.verified = self.infra_errors = self.tokens = 0
        self.running: dict[str, set[str]] = {"rollout": set(), "verify": set()}
        self.passed: set[str] = set()
        self.graded: set[str] = set()
        self.flagged: dict[str, set[str]] = {}
        """Rollouts per flag kind their verdicts carry (docs/security.md, "Flags")."""
        self.not_run = 0
        self.saved_s = 0.0
        self.interrupted = False
        self.completion = 0
        """Completion tokens of the model calls finished so far."""
        self.launcher: Choice | None = None
        """The ``launcher`` event: which server runs the model, why, and the figures expected of it."""
        self.first_start: float | None = None
        self.server_counts: list[tuple[float, int]] = []
        """(time, completion tokens generated) as the server itself counts them: its first and latest reading."""
        self.slow_warned = False

    def on(self, event: ev.Event) -> None:
        """Fold one event into the counts."""
        match event:
            case ev.PlanMade():
                self.tasks, self.n, self.planned = event.tasks, event.n, event.planned
                self.verify_total = event.verify
            case ev.UnitStarted():
                self.running[event.unit].add(event.rollout_id)
                self.first_start = self.first_start or self.clock()
            case ev.RolloutDone():
                self.running["rollout"].discard(event.rollout.rollout_id)
                self.rollouts_done += 1
                if event.rollout.status != "infra_error":
                    self.verify_total += 1
            case ev.Cancelled():
                self.running["rollout"].discard(event.rollout_id)
            case ev.VerdictDone() if event.verdict.role == "grade":
                v = event.verdict
                for flag in v.flag_kinds:
                    self.flagged.setdefault(flag, set()).add(v.rollout_id)
                self.running["verify"].discard(v.rollout_id)
                self.verified += 1
                self.graded.add(v.task_id)
                if v.status == "pass":
                    self.passed.add(v.task_id)
            case ev.Infra():
                self.infra_errors += 1
                self.running.get(event.unit, set()).discard(event.rollout_id or "")
            case ev.EarlyStop():
                self.not_run += event.rollouts_not_run
                self.planned -= len(event.skipped) + len(event.cancelled)
                self.saved_s += event.est_sandbox_s_saved
            case ev.Tokens():
                self.tokens += event.n
                self.completion += event.completion
            case ev.ServerTokens():
                self.server_counts = [*self.server_counts[:1], (self.clock(), event.generated)]
            case ev.LauncherChosen():
                self.launcher = event
            case ev.Interrupted() | ev.Aborted():
                self.interrupted = True

    @property
    def elapsed(self) -> float:
        return self.clock() - self.t0

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at this invocation's rollout rate (None before the first rollout)."""
        if not self.rollouts_done:
            return None
        return max(self.planned - self.rollouts_done, 0) * self.elapsed / self.rollouts_done

    def live_rate(self) -> float | None:
        """Completion tokens/s the model gives this run: the server's own count where it exports one (its readings
        span ``RATE_SPAN_S``), else the finished calls' over the time since the first unit started."""
        if len(self.server_counts) == 2:
            (t0, n0), (t1, n1) = self.server_counts
            return (n1 - n0) / (t1 - t0) if t1 - t0 >= RATE_SPAN_S else None
        if self.first_start is None:
            return None
        return self.completion / max(self.clock() - self.first_start, 1e-9)

    def slow_server(self) -> str | None:
        """A warning, once, when the model server gives under 1/``SLOW_FACTOR`` of the rate expected of it on this
        machine (``launcher``'s figures), naming the launcher that should be faster; None otherwise."""
        chosen = self.launcher
        expected = chosen.figures.get(chosen.launcher) if chosen else None
        if chosen is None or self.slow_warned or not expected or self.first_start is None or self.clock() - self.first_start < SLOW_AFTER_S:
            return None
        if not self.completion and not self.server_counts and self.clock() - self.first_start < SLOW_AFTER_S * SLOW_FACTOR:
            return None  # no call has finished yet: no rate to judge, unless none finishes for far too long
        rate = self.live_rate()
        if rate is None or rate * SLOW_FACTOR >= expected:
            return None
        self.slow_warned = True
        name = chosen.launcher
        where = "measured here" if chosen.figures_from == "calibration" else "documented for such a machine"
        eta = f"; at this rate the rollouts end in {_clock(self.eta_s)}" if self.eta_s is not None else ""
        # Only a server expected to beat this one's own figure is worth a restart; else the machine is the suspect.
        faster = sorted((v, k) for k, v in chosen.figures.items() if k != name and v > expected)
        hint = (
            f"; -c model.launcher={faster[-1][1]} ({faster[-1][0]:g} tokens/s {where}) should be faster (resume with "
            "the same command plus that option)"
            if faster else "; is other work sharing the cores?"
        )  # fmt: skip
        return (
            f"the model server ({name}) gives {rate:.1f} completion tokens/s, under a quarter of the {expected:g} "
            f"{where}{eta}{hint}; docs/models.md, 'Which server'"
        )

    def status_line(self) -> str:
        """Everything beside the bars, on one line."""
        cov = f"{len(self.passed)}/{self.tasks} tasks" + (f" ({len(self.passed) / self.tasks:.0%})" if self.tasks else "")
        line = (
            f"sandboxes running {len(self.running['rollout']) + len(self.running['verify'])} · "
            f"candidates verified {self.verified} · coverage {cov} · tokens/s {self.tokens_per_s:.0f} · "
            f"infra errors {self.infra_errors}"
        )
        if self.flagged:
            rollouts = set().union(*self.flagged.values())
            kinds = ", ".join(f"{k} {len(ids)}" for k, ids in sorted(self.flagged.items()))
            line += f" · flagged {len(rollouts)} ({kinds})"
        if self.not_run:
            line += f" · early stop: {self.not_run} rollouts not run (~{self.saved_s:.0f} sandbox-s saved)"
        return line


def _said(event: ev.Note | ev.LauncherChosen) -> str:
    """The line a note or the server choice prints."""
    return event.message if isinstance(event, ev.Note) else event.line()


class LiveDisplay:
    """A rich Live panel: overall and per-stage bars, the status line, the ETA."""

    def __init__(self, state: ProgressState, console: Console | None = None):
        self.state = state
        self.live = Live(console=console, refresh_per_second=4, transient=False, get_renderable=self.render)

    def render(self) -> Group:
        s = self.state
        table = Table.grid(padding=(0, 1))
        for _ in range(4):
            table.add_column()
        rows = [
            ("rollouts", s.rollouts_done, s.planned, len(s.running["rollout"])),
            ("verification", s.verified, s.verify_total, len(s.running["verify"])),
        ]
        for name, done, total, running in rows:
            bar = ProgressBar(total=max(total, 1), completed=min(done, max(total, 1)), width=40)
            table.add_row(name, bar, f"{done}/{total}", f"{running} running")
        head = f"[bold]agentbon[/] {s.run_id}  elapsed {_clock(s.elapsed)}  ETA {_clock(s.eta_s)}"
        return Group(head, table, s.status_line())

    def __call__(self, event: ev.Event) -> None:
        self.state.on(event)
        match event:
            case ev.Warning():
                self.live.console.print(f"[yellow]warning[/]: {event.message}")
            case ev.Aborted():
                self.live.console.print(f"[red]stopping[/]: {event.reason}")
            case ev.LauncherChosen() | ev.Note():
                self.live.console.print(_said(event))
        if (slow := self.state.slow_server()) is not None:
            self.live.console.print(f"[yellow]warning[/]: {slow}")

    def __enter__(self) -> LiveDisplay:
        self.live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.stop()


class PlainDisplay:
    """Log lines for notable events and a status line every ``every_s`` seconds (stdout not a terminal)."""

    def __init__(self, state: ProgressState, out: Any = None, every_s: float = 30.0):
        self.state, self.out, self.every_s = state, out or sys.stdout, every_s
        self._last = time.time()

    def _say(self, text: str) -> None:
        print(f"[{_clock(self.state.elapsed)}] {text}", file=self.out, flush=True)

    def __call__(self, event: ev.Event) -> None:
        self.state.on(event)
        s = self.state
        match event:
            case ev.PlanMade():
                self._say(f"plan: {event.tasks} tasks x {event.n}: {event.planned} rollouts to run, "
                          f"{event.finished} already done, {event.verify} to verify, {event.skipped} skipped")
            case ev.RolloutDone():
                r = event.rollout
                self._say(f"rollout {r.rollout_id}: {r.status} ({r.exit_status}) {r.timings.wall_s:.1f}s "
                          f"[{s.rollouts_done}/{s.planned}]")
            case ev.VerdictDone():
                v = event.verdict
                flags = f" [flagged: {', '.join(v.flag_kinds)}]" if v.flag_kinds else ""
                self._say(f"verdict {v.rollout_id} {v.role}: {v.status}{flags} {v.reason}".rstrip())
            case ev.Infra():
                self._say(f"infra error on {event.unit} {event.rollout_id or ''}: {event.error}: {event.message}")
            case ev.EarlyStop():
                self._say(f"early stop {event.task_id}: {event.rollouts_not_run} rollouts not run "
                          f"(~{event.est_sandbox_s_saved:.0f} sandbox-s saved)")
            case ev.Warning():
                self._say(f"warning: {event.message}")
            case ev.LauncherChosen() | ev.Note():
                self._say(_said(event))
            case ev.Shipped():
                self._say(f"carried to the cluster through Ray: {event.repos} repositories "
                          f"({event.repo_bytes / 2**20:.1f} MiB), verifier scripts and base recipe "
                          f"({event.file_bytes / 2**10:.0f} KiB)")
            case ev.Interrupted():
                self._say(f"interrupted: {len(event.pending)} units cancelled, sandboxes removed; run again to resume")
            case ev.Aborted():
                self._say(f"stopped: {event.reason}; {len(event.pending)} units cancelled; run again to resume")
        if (slow := s.slow_server()) is not None:
            self._say(f"warning: {slow}")
        if time.time() - self._last >= self.every_s:
            self._last = time.time()
            self._say(f"{s.rollouts_done}/{s.planned} rollouts, ETA {_clock(s.eta_s)} · {s.status_line()}")

    def __enter__(self) -> PlainDisplay:
        return self

    def __exit__(self, *exc: object) -> None:
        pass


def make_display(run_id: str = "", console: Console | None = None) -> LiveDisplay | PlainDisplay:
    """A Live panel on a terminal, plain log lines otherwise."""
    console = console or make_console()
    state = ProgressState(run_id)
    return LiveDisplay(state, console) if console.is_terminal else PlainDisplay(state, out=console.file)
