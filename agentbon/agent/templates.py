"""Prompt templates: the built-in ones, and a run's own folder (``agent.prompts_dir``) held by its content.

A custom folder is read once, when the config is loaded: the digest of its files becomes ``agent.prompts_digest``,
part of the run's identity (orchestrate/resume.py), and on a cluster the driver carries the files to every node
(orchestrate/shipping.py, docs/architecture.md "No shared filesystem"). A worker renders from the very bytes it
checked against that digest: the carried copy where this node has one, else the folder itself. A node without the
folder, or with other templates in it, fails the unit as infrastructure (``PromptsUnavailable``), never falling back
to the built-in prompts.
"""

from __future__ import annotations

import os
import socket
from functools import lru_cache
from pathlib import Path

import jinja2

from agentbon.config import AgentConfig
from agentbon.errors import ConfigError, InfraError
from agentbon.prompt_files import BUILT_IN, prompts_digest, read_prompts

PROMPTS_ENV = "AGENTBON_PROMPTS"
"""A folder holding carried prompt folders by digest (``<digest>/<file>``), set on a worker by ``shipping.unpack``."""


class PromptsUnavailable(InfraError):
    """This node cannot read the run's prompt templates as the run recorded them."""


def _folder(config: AgentConfig) -> Path:
    """Where this node reads the run's templates: the carried copy of their digest, else ``prompts_dir``."""
    carried = os.environ.get(PROMPTS_ENV)
    if carried and config.prompts_digest and (Path(carried) / config.prompts_digest).is_dir():
        return Path(carried) / config.prompts_digest
    return Path(str(config.prompts_dir))


@lru_cache(maxsize=8)
def _checked(folder: Path, digest: str | None) -> jinja2.Environment:
    try:
        files = read_prompts(folder)
    except ConfigError as e:
        raise PromptsUnavailable(f"node {socket.gethostname()}: cannot read the run's prompt templates: {e}") from e
    found = prompts_digest(files)
    if digest is not None and found != digest:
        raise PromptsUnavailable(
            f"node {socket.gethostname()}: the prompt templates in {folder} (digest {found}) are not the ones the run "
            f"recorded (agent.prompts_digest {digest}): the folder changed, or this node has another copy"
        )
    return _environment(tuple(sorted(files.items())))


@lru_cache(maxsize=8)
def _environment(files: tuple[tuple[str, str], ...]) -> jinja2.Environment:
    loader: jinja2.BaseLoader = jinja2.FileSystemLoader(str(BUILT_IN))
    if files:
        loader = jinja2.ChoiceLoader([jinja2.DictLoader(dict(files)), loader])
    # StrictUndefined: a template naming a variable the agent does not pass fails loudly, not silently empty.
    return jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined, keep_trailing_newline=False)


def environment(config: AgentConfig) -> jinja2.Environment:
    """The templates a rollout renders: the built-in ones, overridden by the run's own where it has a folder (read
    once per process, and checked against ``agent.prompts_digest``)."""
    if not config.prompts_dir:
        return _environment(())
    return _checked(_folder(config), config.prompts_digest)
