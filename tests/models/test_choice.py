"""Which server `auto` starts: the CPU's flags from a given /proc/cpuinfo, calibration figures given as inputs."""

from __future__ import annotations

import pytest

from agentbon.config import ModelConfig
from agentbon.models.calibrate import Calibration, Measured
from agentbon.models.choice import CLOSE, Facts, decide, vllm_worth_setting_up
from agentbon.models.cpu import parse_cpuinfo, vllm_format

# First lines of /proc/cpuinfo as each kind of machine prints them (flags shortened to what matters plus noise).
EPYC_AVX2 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC
flags\t\t: fpu vme sse sse2 ssse3 fma sse4_1 sse4_2 avx f16c avx2 bmi2 sha_ni vaes vpclmulqdq
"""
SAPPHIRE_RAPIDS = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu sse2 avx avx2 avx512f avx512dq avx512bw avx512vl avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8
"""
CASCADE_LAKE = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz
flags\t\t: fpu sse2 avx avx2 avx512f avx512dq avx512bw avx512vl avx512_vnni
"""
SKYLAKE = """processor\t: 0
model name\t: Intel(R) Xeon(R) Platinum 8175M CPU @ 2.50GHz
flags\t\t: fpu sse2 avx avx2 avx512f avx512dq avx512bw avx512vl
"""
OLD_X86 = """processor\t: 0
model name\t: Intel(R) Xeon(R) CPU E5-2670 0 @ 2.60GHz
flags\t\t: fpu sse2 sse4_2 avx
"""
GRAVITON = """processor\t: 0
BogoMIPS\t: 243.75
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm sve
"""


def facts(text: str, cores: int = 2, *, arch: str = "x86_64", calibration: Calibration | None = None, **kw: bool) -> Facts:
    cpu = parse_cpuinfo(text, cores=cores, arch=arch)
    return Facts(cpu=cpu, gpu_vllm=kw.get("gpu", False), vllm=kw.get("vllm", True), llama=kw.get("llama", True),
                 calibration=calibration)  # fmt: skip


def calibration(llama: float, vllm: float) -> Calibration:
    measured = tuple(
        Measured(launcher=name, tokens_per_s=rate, in_flight=2, ready_s=1.0, window_s=30.0, tokens=int(rate * 30))
        for name, rate in (("llama-cpp", llama), ("vllm", vllm))
    )
    return Calibration(key="k", cpu="test", measured=measured, at="2026-12-04T00:00:00+00:00")


def test_cpuinfo_is_read_for_name_flags_and_isa() -> None:
    cpu = parse_cpuinfo(EPYC_AVX2, cores=2)
    assert (cpu.name, cpu.isa, "avx2" in cpu.flags) == ("AMD EPYC", "avx2", True)
    assert cpu.describe() == "AMD EPYC, 2 cores, avx2 (no AVX-512)"
    assert parse_cpuinfo(SAPPHIRE_RAPIDS, cores=8).isa == "avx512-vnni-bf16"
    assert parse_cpuinfo(CASCADE_LAKE, cores=8).isa == "avx512-vnni"
    assert parse_cpuinfo(SKYLAKE, cores=8).isa == "avx512"
    assert parse_cpuinfo(OLD_X86, cores=8).isa == "baseline"
    arm = parse_cpuinfo(GRAVITON, cores=4, arch="aarch64")
    assert ("asimd" in arm.flags, arm.name, arm.describe()) == (True, "unknown CPU", "unknown CPU, 4 cores, baseline")
    assert parse_cpuinfo("", cores=0).cores == 1


def test_the_vllm_format_follows_the_int8_and_bf16_instructions() -> None:
    assert vllm_format(parse_cpuinfo(SAPPHIRE_RAPIDS, cores=8)).label == "w8a8"
    assert vllm_format(parse_cpuinfo(CASCADE_LAKE, cores=8)).label == "w8a8"
    # AVX-512 without VNNI or bf16, and AVX2: int8 recomputes its weight compensation per call, bf16 is emulated.
    for text in (SKYLAKE, EPYC_AVX2):
        fmt = vllm_format(parse_cpuinfo(text, cores=8))
        assert (fmt.weights, fmt.dtype, fmt.label) == ("bf16", "float32", "bf16-as-fp32")
    bf16_only = SKYLAKE.replace("avx512vl", "avx512vl avx512_bf16")
    assert vllm_format(parse_cpuinfo(bf16_only, cores=8)).label == "bf16"


def test_two_avx2_cores_choose_llama_cpp_with_the_figures_that_say_why() -> None:
    choice = decide("auto", facts(EPYC_AVX2))
    assert (choice.launcher, choice.decided_by, choice.figures_from) == ("llama-cpp", "cpu", "documented")
    assert "AMD EPYC, 2 cores, avx2" in choice.reason and "llama.cpp" in choice.reason
    assert choice.figures["llama-cpp"] > 10 * choice.figures["vllm"]
    assert choice.expected_tokens_s == choice.figures["llama-cpp"] and choice.faster() is None
    # AVX-512 without VNNI on few cores: the same (no fast int8 path, fp32 weights are 6x llama.cpp's Q4)
    assert decide("auto", facts(SKYLAKE, cores=4)).launcher == "llama-cpp"


def test_avx512_with_vnni_chooses_vllm() -> None:
    for text in (CASCADE_LAKE, SAPPHIRE_RAPIDS):
        choice = decide("auto", facts(text, cores=2))
        assert (choice.launcher, choice.decided_by) == ("vllm", "cpu")
        assert "int8 dot products" in choice.reason and choice.figures["vllm"] > choice.figures["llama-cpp"]


def test_where_the_flags_leave_it_open_a_calibration_decides() -> None:
    for text in (EPYC_AVX2, SKYLAKE):  # more cores than the rule covers
        open_ = decide("auto", facts(text, cores=32))
        assert (open_.launcher, open_.decided_by, open_.figures) == ("llama-cpp", "uncalibrated", {})
        fast = decide("auto", facts(text, cores=32, calibration=calibration(llama=20.0, vllm=95.0)))
        assert (fast.launcher, fast.decided_by, fast.figures_from) == ("vllm", "calibration", "calibration")
        assert "measured here, llama-cpp 20.0 tokens/s" in fast.reason and fast.expected_tokens_s == 95.0
        slow = decide("auto", facts(text, cores=32, calibration=calibration(llama=20.0, vllm=9.0)))
        assert slow.launcher == "llama-cpp"


def test_a_near_tie_goes_to_llama_cpp() -> None:
    assert decide("auto", facts(EPYC_AVX2, cores=32, calibration=calibration(20.0, 20.0 * CLOSE))).launcher == "llama-cpp"
    assert decide("auto", facts(EPYC_AVX2, cores=32, calibration=calibration(20.0, 20.0 * CLOSE + 0.1))).launcher == "vllm"


def test_a_calibration_made_here_outranks_the_documented_figures() -> None:
    choice = decide("auto", facts(CASCADE_LAKE, cores=4, calibration=calibration(llama=12.0, vllm=6.0)))
    assert (choice.launcher, choice.decided_by) == ("llama-cpp", "calibration")


def test_what_is_installed_and_what_is_asked_come_first() -> None:
    named = decide("vllm", facts(EPYC_AVX2))
    assert (named.launcher, named.decided_by) == ("vllm", "config") and named.reason.startswith("model.launcher=vllm")
    assert named.faster() == ("llama-cpp", named.figures["llama-cpp"])  # the progress display's suggestion
    assert decide("auto", facts(SAPPHIRE_RAPIDS, gpu=True)).launcher == "vllm-actors"
    assert decide("auto", facts(SAPPHIRE_RAPIDS, vllm=False)).decided_by == "installed"
    assert decide("auto", facts(EPYC_AVX2, vllm=False)).decided_by == "cpu"  # the better reason where it agrees
    only_vllm = decide("auto", facts(EPYC_AVX2, llama=False))
    assert (only_vllm.launcher, only_vllm.decided_by) == ("vllm", "installed")
    assert decide("auto", facts(OLD_X86, cores=64)).launcher == "llama-cpp"  # no AVX2: vLLM's kernels need it


def test_the_setup_builds_vllm_only_where_it_could_be_chosen() -> None:
    assert not vllm_worth_setting_up(parse_cpuinfo(EPYC_AVX2, cores=2))
    assert not vllm_worth_setting_up(parse_cpuinfo(OLD_X86, cores=64))
    assert vllm_worth_setting_up(parse_cpuinfo(CASCADE_LAKE, cores=2))
    assert vllm_worth_setting_up(parse_cpuinfo(EPYC_AVX2, cores=32))  # left to a calibration


def test_resolve_model_takes_the_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    from agentbon.models import choice, resolve_model

    monkeypatch.setattr(choice, "facts", lambda config: facts(EPYC_AVX2))
    assert resolve_model(ModelConfig()).launcher == "llama-cpp"
    assert resolve_model(ModelConfig(launcher="vllm")).launcher == "vllm"
    assert resolve_model(ModelConfig(endpoint="http://h:1/v1")).launcher == "auto"  # an endpoint: nothing started


def test_a_named_launcher_is_what_the_run_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run asks its model service which server it starts: a launcher the config names is that one, never auto's."""
    from agentbon.models import choice
    from agentbon.models.service import ModelService

    monkeypatch.setattr(choice, "facts", lambda config: facts(EPYC_AVX2))  # auto would give llama-cpp here
    named = ModelService(ModelConfig(launcher="vllm")).choose()
    assert (named.launcher, named.decided_by) == ("vllm", "config")
    assert choice.choose(ModelConfig(launcher="vllm-actors")).launcher == "vllm-actors"
    assert ModelService(ModelConfig()).choose().launcher == "llama-cpp"


def test_the_demo_runs_fewer_rollouts_where_the_chosen_server_is_slow() -> None:
    from agentbon.models.choice import DEMO_MINUTES, DEMO_TOKENS_PER_ROLLOUT, demo_n, demo_rate

    fast = decide("auto", facts(CASCADE_LAKE, cores=2))
    slow = decide("auto", facts(EPYC_AVX2, cores=2))
    assert demo_n(fast, tasks=10) == 8 and demo_n(slow, tasks=10) == 2
    # llama.cpp answers one call at a time: the batch gets a share of its one-request figure, vLLM all of its own.
    assert demo_rate(fast) == fast.expected_tokens_s and demo_rate(slow) < (slow.expected_tokens_s or 0) * 0.6
    for choice in (fast, slow):  # the N chosen fits the time (unless it is the least, 2), the next doubling would not
        n, rate = demo_n(choice, 10), demo_rate(choice)
        assert n == 2 or 10 * n * DEMO_TOKENS_PER_ROLLOUT / rate <= DEMO_MINUTES * 60  # type: ignore[operator]
        assert n == 8 or 10 * 2 * n * DEMO_TOKENS_PER_ROLLOUT / rate > DEMO_MINUTES * 60  # type: ignore[operator]
    assert demo_n(decide("auto", facts(EPYC_AVX2, cores=32)), tasks=10) == 8  # no figure yet: the full demo
