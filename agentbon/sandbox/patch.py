"""Taking a sandbox's changes as a patch: ``git diff --binary`` against the base commit, new files included.

Both backends run the same shell in the sandbox. It stages into a throwaway index (a copy of the agent's, for its
stat cache), so the agent's own index is left as it was, and writes the diff to a file that is then read back
whole (command output is capped; a patch must not be).
"""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Callable

from agentbon.errors import PatchError
from agentbon.types import ExecResult

# Build and cache junk that must never reach a patch, whatever the repository's .gitignore says.
DIFF_EXCLUDES = ("__pycache__/", "*.py[cod]", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/", ".hypothesis/")
MAX_PATCH_BYTES = 32 << 20
DIFF_TIMEOUT_S = 300.0


def _attribute_pattern(path: str) -> str:
    """A gitattributes pattern matching exactly ``path`` (anchored, glob characters and spaces escaped)."""
    return "/" + re.sub(r"([*?\[\]\\!#])", r"\\\1", path).replace(" ", "[[:space:]]")


def diff_script(base_commit: str, out_path: str, binary_paths: list[str] | None = None) -> str:
    """Shell that writes the working tree's diff against ``base_commit`` to ``out_path``."""
    q = shlex.quote
    excludes = "".join(f"{p}\n" for p in DIFF_EXCLUDES)
    attributes = "".join(f"{_attribute_pattern(p)} binary\n" for p in binary_paths or [])
    return (
        "set -e; tmp=$(mktemp -d); trap 'rm -rf \"$tmp\"' EXIT\n"
        "gitdir=$(git rev-parse --absolute-git-dir)\n"
        'if [ -f "$gitdir/index" ]; then cp "$gitdir/index" "$tmp/index"; fi\n'
        f'printf %s {q(excludes)} > "$tmp/excludes"; printf %s {q(attributes)} > "$tmp/attributes"\n'
        'export GIT_INDEX_FILE="$tmp/index"\n'
        'git -c core.excludesFile="$tmp/excludes" add -A -- :/ >/dev/null\n'
        'git -c core.quotePath=false -c core.attributesFile="$tmp/attributes" diff --cached --binary --no-color '
        f"--no-ext-diff --no-textconv --full-index {q(base_commit)} > {q(out_path)}\n"
    )


def _non_utf8_paths(patch: bytes) -> list[str]:
    """Paths of the files whose part of the patch is not UTF-8 (they are then diffed as binary)."""
    paths = []
    for section in re.split(rb"(?m)^(?=diff --git )", patch):
        try:
            section.decode("utf-8")
            continue
        except UnicodeDecodeError:
            pass
        header = section.split(b"\n", 1)[0][len(b"diff --git ") :]
        if header.startswith(b"a/"):  # "a/P b/P": both halves are equal without a rename
            paths.append(header[2 : 2 + (len(header) - 5) // 2].decode("utf-8", errors="replace"))
    return paths


def take_patch(
    run: Callable[[str, float], ExecResult], read: Callable[[str], bytes], base_commit: str, tmp_dir: str = "/tmp"
) -> str:
    """Run the diff in the sandbox with ``run``, read the file back with ``read``; return the patch text."""
    out = f"{tmp_dir.rstrip('/')}/.agentbon-diff-{secrets.token_hex(6)}.patch"
    binary: list[str] = []
    for _ in range(2):
        try:
            result = run(diff_script(base_commit, out, binary), DIFF_TIMEOUT_S)
            if not result.ok:
                raise PatchError(
                    f"git diff against {base_commit[:12]} failed (exit {result.exit_code}): "
                    f"{result.output.strip()[-1500:]}"
                )
            data = read(out)
        finally:
            run(f"rm -f {shlex.quote(out)}", 30.0)
        if len(data) > MAX_PATCH_BYTES:
            raise PatchError(f"the patch is {len(data)} bytes, over the {MAX_PATCH_BYTES}-byte limit")
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            binary = _non_utf8_paths(data)  # diff those files as binary: text in another encoding stays exact
            if not binary:
                break
    return data.decode("utf-8", errors="replace")
