"""Finding mini-swe-agent (the ``mini`` extra, imported lazily) and reading its config files.

Importing this module needs nothing beyond agentbon's core; ``load_package`` imports mini-swe-agent itself, quietly
(it prints a banner at import unless told not to), and says which extra brings it when it is missing.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from agentbon.config import MINI_CONFIGS
from agentbon.errors import ConfigError, MissingExtra

MODULE = "minisweagent"


def load_package() -> ModuleType:
    """Import mini-swe-agent without its start-up banner; ``MissingExtra`` names the ``mini`` extra."""
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
    try:
        import minisweagent
    except ImportError as e:
        raise MissingExtra(MODULE, "mini") from e
    return minisweagent


def config_path(name_or_path: str) -> Path:
    """The YAML file ``agent.mini_config`` names: one shipped in mini-swe-agent's package, or the user's own."""
    if name_or_path in MINI_CONFIGS:
        return Path(load_package().package_dir) / "config" / MINI_CONFIGS[name_or_path]
    return Path(name_or_path)


def read_config(name_or_path: str) -> dict[str, Any]:
    """The config's ``agent``, ``environment`` and ``model`` sections (each a dict, empty where absent).

    Raises ``ConfigError`` for a file that is not a YAML mapping or whose ``agent`` section has no templates."""
    path = config_path(name_or_path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise ConfigError(f"agent.mini_config: cannot read {path}: {e}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"agent.mini_config: {path} is not a YAML mapping")
    sections = {key: dict(data.get(key) or {}) for key in ("agent", "environment", "model")}
    missing = [k for k in ("system_template", "instance_template") if k not in sections["agent"]]
    if missing:
        raise ConfigError(f"agent.mini_config: {path} has no agent.{' or agent.'.join(missing)}")
    return sections
