"""A prompt folder read as its content: the files by name, their digest, and the check made when the config loads.

Apart from agent/templates.py (which renders them) so that the config layer can read a folder without importing the
agents that run on it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from agentbon.errors import ConfigError

BUILT_IN = Path(__file__).parent / "agent" / "prompts"
"""The built-in templates."""


def read_prompts(folder: str | Path) -> dict[str, str]:
    """Every file under ``folder`` (templates may include one another) by its relative POSIX path; ``ConfigError``
    naming the folder where it is not a directory of UTF-8 text."""
    root = Path(folder)
    if not root.is_dir():
        raise ConfigError(f"{folder} is not a directory")
    files: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            try:
                files[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as e:
                raise ConfigError(f"cannot read {path} as UTF-8 text: {e}") from e
    return files


def prompts_digest(files: dict[str, str]) -> str:
    """A hash of the templates' names and contents (not of where they are)."""
    h = hashlib.sha256()
    for name in sorted(files):
        data = files[name].encode()
        h.update(f"{name}\0{len(data)}\0".encode() + data)
    return h.hexdigest()[:16]


def check_prompts(folder: str, agent_type: str) -> None:
    """``ValueError`` where ``folder`` cannot be read, or where none of its templates replaces a built-in prompt of
    ``agent_type`` (it would change nothing)."""
    if agent_type == "mini":
        raise ValueError("the mini agent's prompts are its config file's (agent.mini_config), not a prompts folder's")
    if agent_type == "command":
        raise ValueError("the command agent's prompts are its program's own, not a prompts folder's")
    files = read_prompts(folder)
    own = sorted(p.name for p in BUILT_IN.glob(f"{agent_type}_*.j2"))
    if not set(files) & set(own):
        raise ValueError(
            f"{folder} has no template named as a built-in prompt of the {agent_type} agent ({', '.join(own)}): "
            "it would change nothing"
        )
