"""The progress display says which server runs the model and why, and warns once when it is far slower than the
figures expected of it on this machine, naming the launcher that should be faster."""

from __future__ import annotations

import io

from agentbon.models.choice import decide
from agentbon.orchestrate import events as ev
from agentbon.progress import RATE_SPAN_S, SLOW_AFTER_S, SLOW_FACTOR, PlainDisplay, ProgressState
from tests.models.test_choice import facts


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def display(launcher: str = "vllm") -> tuple[PlainDisplay, Clock, io.StringIO]:
    clock, out = Clock(), io.StringIO()
    shown = PlainDisplay(ProgressState("r", clock=clock), out=out, every_s=1e9)
    choice = decide(launcher, facts(open_avx2()))  # the documented figures of a 2-core AVX2 machine
    shown(ev.LauncherChosen(**choice.model_dump()))
    shown(ev.PlanMade(tasks=10, n=8, planned=80, finished=0, verify=0, skipped=0))
    shown(ev.UnitStarted(unit="rollout", rollout_id="t/0"))
    return shown, clock, out


def open_avx2() -> str:
    from tests.models.test_choice import EPYC_AVX2

    return EPYC_AVX2


def test_the_run_starts_by_saying_which_server_and_why() -> None:
    _, _, out = display("llama-cpp")
    line = out.getvalue().splitlines()[0]
    assert "model server: llama-cpp (model.launcher=llama-cpp; AMD EPYC, 2 cores, avx2 (no AVX-512))" in line


def test_a_server_far_below_its_expected_rate_is_named_once_with_the_faster_launcher() -> None:
    shown, clock, out = display("vllm")
    expected_vllm = shown.state.launcher.figures["vllm"]
    # vLLM's own count: a quarter of the expected rate less a little, over more than the span it needs.
    rate = expected_vllm / SLOW_FACTOR * 0.9
    shown(ev.ServerTokens(generated=0))
    clock.now += SLOW_AFTER_S
    shown(ev.ServerTokens(generated=int(rate * SLOW_AFTER_S)))
    warnings = [line for line in out.getvalue().splitlines() if "warning" in line]
    assert len(warnings) == 1, out.getvalue()
    assert "the model server (vllm) gives" in warnings[0] and "-c model.launcher=llama-cpp" in warnings[0]
    clock.now += SLOW_AFTER_S
    shown(ev.Tick())
    assert len([line for line in out.getvalue().splitlines() if "warning" in line]) == 1  # once


def test_no_warning_before_the_server_has_had_its_time_or_at_the_expected_rate() -> None:
    shown, clock, out = display("llama-cpp")
    expected = shown.state.launcher.figures["llama-cpp"]
    clock.now += SLOW_AFTER_S / 2
    shown(ev.Tick())  # nothing done yet, but too early to judge
    assert shown.state.live_rate() == 0.0 and "warning" not in out.getvalue()
    clock.now += SLOW_AFTER_S
    # finished calls at half the expected rate: slower, not far slower
    shown(ev.Tokens(n=5000, completion=int(expected / 2 * (clock.now - 1000.0))))
    assert "warning" not in out.getvalue()


def test_finished_calls_are_the_rate_where_the_server_counts_nothing() -> None:
    shown, clock, out = display("llama-cpp")
    clock.now += SLOW_AFTER_S * 2
    shown(ev.Tokens(n=3000, completion=10))  # llama.cpp exports no counter: the calls that finished
    assert shown.state.live_rate() == 10 / (SLOW_AFTER_S * 2)
    text = out.getvalue()
    assert "the model server (llama-cpp) gives 0.0 completion tokens/s" in text
    assert "-c model.launcher=vllm" not in text  # vLLM's figure here is lower still: nothing to suggest


def test_no_finished_call_is_no_rate_until_far_too_long() -> None:
    """Where the server counts nothing, a rate needs a finished call: the first calls carry the long shared prompt
    and a loaded machine stretches them, so none finished yet is no evidence of a slow server, for a while."""
    shown, clock, out = display("llama-cpp")
    clock.now += SLOW_AFTER_S * 2
    shown(ev.Tick())
    assert "warning" not in out.getvalue()
    clock.now += SLOW_AFTER_S * SLOW_FACTOR
    shown(ev.Tick())
    assert "the model server (llama-cpp) gives 0.0 completion tokens/s" in out.getvalue()


def test_the_servers_own_count_needs_a_span_before_it_is_a_rate() -> None:
    state = ProgressState("r", clock=(clock := Clock()))
    state.on(ev.ServerTokens(generated=100))
    clock.now += RATE_SPAN_S / 2
    state.on(ev.ServerTokens(generated=110))
    assert state.live_rate() is None
    clock.now += RATE_SPAN_S
    state.on(ev.ServerTokens(generated=190))
    assert state.live_rate() == 90 / (RATE_SPAN_S * 1.5)


def test_no_figures_no_warning() -> None:
    clock, out = Clock(), io.StringIO()
    shown = PlainDisplay(ProgressState("r", clock=clock), out=out, every_s=1e9)
    shown(ev.UnitStarted(unit="rollout", rollout_id="t/0"))  # an endpoint given: no launcher, nothing expected
    clock.now += SLOW_AFTER_S * 10
    shown(ev.Tick())
    assert "warning" not in out.getvalue()
