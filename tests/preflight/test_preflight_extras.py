"""The launcher's extras: llama_cpp and a GGUF for llama-cpp, a vLLM interpreter and a model dir for vllm."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from agentbon.config import RunConfig
from agentbon.models.vllm_server import default_hf_dir
from agentbon.orchestrate.factories import Factories
from agentbon.preflight import Context
from agentbon.preflight.model import check_extras
from agentbon.testing import FakeService


@pytest.fixture
def empty_home(tmp_path, monkeypatch):
    """No cached weights and no converted model: an ``AGENTBON_HOME`` with nothing in it."""
    monkeypatch.setenv("AGENTBON_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("AGENTBON_VLLM_PYTHON", raising=False)
    return tmp_path / "home"


def _extras(**model) -> list:
    return check_extras(Context(RunConfig(model=model), []))


def test_llama_cpp_missing_or_present_is_what_the_interpreter_has(empty_home, tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    problems = _extras(launcher="llama-cpp", path=str(gguf))
    missing = importlib.util.find_spec("llama_cpp") is None
    assert [p.cause for p in problems if "llama-cpp-python" in p.cause] == (
        ["model.launcher=llama-cpp: llama-cpp-python is not installed: pip install 'agentbon[local]'"]
        if missing
        else []
    )
    assert all("agentbon[local]" in p.fix for p in problems)


def test_a_gguf_path_that_is_not_a_file_is_fatal(empty_home, tmp_path):
    problems = [p for p in _extras(launcher="llama-cpp", path=str(tmp_path / "absent.gguf")) if "model.path" in p.cause]
    assert len(problems) == 1 and problems[0].fatal and "absent.gguf is not a file" in problems[0].cause


def test_uncached_default_weights_are_a_warning_naming_the_fetch_command(empty_home):
    [warning] = [p for p in _extras(launcher="llama-cpp") if "weights" in p.cause]
    assert not warning.fatal and str(empty_home / "models") in warning.cause
    assert "agentbon model fetch" in warning.fix


def test_vllm_without_an_interpreter_or_model_is_fatal(empty_home, tmp_path, monkeypatch):
    monkeypatch.setenv("AGENTBON_VLLM_PYTHON", str(tmp_path / "no-python"))
    problems = _extras(launcher="vllm")
    causes = " | ".join(p.cause for p in problems)
    assert all(p.fatal for p in problems) and len(problems) == 2
    # The folder in the weights this CPU runs fastest (int8 with VNNI, else bf16): models/cpu.py.
    assert "no-python does not exist" in causes and f"{default_hf_dir().name} does not exist" in causes
    assert any("setup_vllm_cpu.sh" in p.fix for p in problems)


def test_vllm_refuses_a_gguf_path(empty_home):
    problems = _extras(launcher="vllm", path="/models/x.gguf")
    assert any("not a GGUF file" in p.cause for p in problems)


def test_vllm_actors_checks_vllm_in_the_engine_interpreter(empty_home, tmp_path):
    hf = tmp_path / "hf"
    hf.mkdir()
    problems = _extras(launcher="vllm-actors", vllm_python=sys.executable, path=str(hf))
    has_vllm = importlib.util.find_spec("vllm") is not None
    assert [p.check for p in problems] == ([] if has_vllm else ["extras"])
    if not has_vllm:
        assert sys.executable in problems[0].cause and "vllm is not installed" in problems[0].cause
    [missing] = _extras(launcher="vllm-actors", vllm_python=str(tmp_path / "nope"), path=str(hf))
    assert "model.vllm_python" in missing.cause


def test_no_extras_are_needed_with_an_endpoint_or_a_fake_server(empty_home, tmp_path):
    assert _extras(endpoint="http://127.0.0.1:9/v1") == []  # a launcher beside it is refused at load (inert.py)
    config = RunConfig(model={"launcher": "llama-cpp", "path": str(tmp_path / "absent.gguf")})
    assert check_extras(Context(config, [], Factories(server=FakeService))) == []
