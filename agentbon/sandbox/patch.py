"""Taking a sandbox's changes as a patch: ``git diff --binary`` against the base commit, new files included.

Both backends run the same shell in the sandbox. It stages into a throwaway index (a copy of the agent's, for its
stat cache), so the agent's own index is left as it was, and writes the diff to a file. The process backend reads
that file back; the docker backend has the same script print it (``stream_patch``), so taking a patch is one
exec. Either way the patch comes back whole and byte for byte (command output is capped; a patch must not be).
"""

from __future__ import annotations

import re
import secrets
import shlex
from collections.abc import Callable

from agentbon.diffs import GIT_HEADER, header_paths
from agentbon.errors import PatchError
from agentbon.types import ExecResult

# Build and cache junk that must never reach a patch, whatever the repository's .gitignore says.
DIFF_EXCLUDES = ("__pycache__/", "*.py[cod]", ".pytest_cache/", ".mypy_cache/", ".ruff_cache/", ".hypothesis/")
MAX_PATCH_BYTES = 32 << 20
DIFF_TIMEOUT_S = 300.0
TOO_LARGE_EXIT = 3
_TOO_LARGE = re.compile(r"agentbon: patch too large: (\d+) bytes")


def _attribute_pattern(path: str) -> str:
    """A gitattributes pattern matching exactly ``path`` (anchored, glob characters and spaces escaped)."""
    return "/" + re.sub(r"([*?\[\]\\!#])", r"\\\1", path).replace(" ", "[[:space:]]")


def diff_script(base_commit: str, out_path: str | None, binary_paths: list[str] | None = None) -> str:
    """Shell that writes the working tree's diff against ``base_commit`` to ``out_path``.

    With ``out_path=None`` the diff is printed instead, and nothing else is: git's messages go to a scratch file
    that is printed only when the script fails, and a diff over ``MAX_PATCH_BYTES`` is refused in the sandbox
    (exit ``TOO_LARGE_EXIT``) rather than sent.
    """
    q = shlex.quote
    excludes = "".join(f"{p}\n" for p in DIFF_EXCLUDES)
    attributes = "".join(f"{_attribute_pattern(p)} binary\n" for p in binary_paths or [])
    target = '"$tmp/patch"' if out_path is None else q(out_path)
    if out_path is None:
        head = (
            "set -e; tmp=$(mktemp -d)\n"
            'trap \'rc=$?; if [ "$rc" -ne 0 ]; then cat "$tmp/err" 2>/dev/null; fi; rm -rf "$tmp"; exit "$rc"\' EXIT\n'
            'exec 2>"$tmp/err"\n'
        )
    else:
        head = "set -e; tmp=$(mktemp -d); trap 'rm -rf \"$tmp\"' EXIT\n"
    script = head + (
        "gitdir=$(git rev-parse --absolute-git-dir)\n"
        'if [ -f "$gitdir/index" ]; then cp "$gitdir/index" "$tmp/index"; fi\n'
        f'printf %s {q(excludes)} > "$tmp/excludes"; printf %s {q(attributes)} > "$tmp/attributes"\n'
        'export GIT_INDEX_FILE="$tmp/index"\n'
        'git -c core.excludesFile="$tmp/excludes" add -A -- :/ >/dev/null\n'
        'git -c core.quotePath=false -c core.attributesFile="$tmp/attributes" diff --cached --binary --no-color '
        f"--no-ext-diff --no-textconv --full-index {q(base_commit)} > {target}\n"
    )
    if out_path is None:
        script += (
            f'size=$(wc -c < "$tmp/patch"); if [ "$size" -gt {MAX_PATCH_BYTES} ]; then\n'
            f'  echo "agentbon: patch too large: $size bytes" >&2; exit {TOO_LARGE_EXIT}; fi\n'
            'cat "$tmp/patch"\n'
        )
    return script


def _non_utf8_paths(patch: bytes) -> list[str]:
    """Paths of the files whose part of the patch is not UTF-8 (they are then diffed as binary)."""
    paths = []
    for section in re.split(rb"(?m)^(?=diff --git )", patch):
        try:
            section.decode("utf-8")
            continue
        except UnicodeDecodeError:
            pass
        header = header_paths(section.split(b"\n", 1)[0][len(GIT_HEADER) :].decode("utf-8", errors="replace"))
        if header:
            paths.append(header[0])
    return paths


def _failed(base_commit: str, exit_code: int, output: str) -> PatchError:
    return PatchError(f"git diff against {base_commit[:12]} failed (exit {exit_code}): {output.strip()[-1500:]}")


def _too_large(size: int) -> PatchError:
    return PatchError(f"the patch is {size} bytes, over the {MAX_PATCH_BYTES}-byte limit")


def _decoded(produce: Callable[[list[str]], bytes]) -> str:
    """The patch as text; files whose part is not UTF-8 are diffed again as binary, so their bytes stay exact."""
    binary: list[str] = []
    for _ in range(2):
        data = produce(binary)
        if len(data) > MAX_PATCH_BYTES:
            raise _too_large(len(data))
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            binary = _non_utf8_paths(data)
            if not binary:
                break
    return data.decode("utf-8", errors="replace")


def take_patch(
    run: Callable[[str, float], ExecResult], read: Callable[[str], bytes], base_commit: str, tmp_dir: str = "/tmp"
) -> str:
    """Run the diff in the sandbox with ``run``, read the file back with ``read``; return the patch text."""
    out = f"{tmp_dir.rstrip('/')}/.agentbon-diff-{secrets.token_hex(6)}.patch"

    def produce(binary: list[str]) -> bytes:
        try:
            result = run(diff_script(base_commit, out, binary), DIFF_TIMEOUT_S)
            if not result.ok:
                raise _failed(base_commit, result.exit_code, result.output)
            return read(out)
        finally:
            run(f"rm -f {shlex.quote(out)}", 30.0)

    return _decoded(produce)


def stream_patch(capture: Callable[[str, float, int], tuple[int, bytes]], base_commit: str) -> str:
    """Run the printing diff script with ``capture`` (exit code and raw output bytes, at most the limit given)."""

    def produce(binary: list[str]) -> bytes:
        exit_code, data = capture(diff_script(base_commit, None, binary), DIFF_TIMEOUT_S, MAX_PATCH_BYTES + 1)
        if exit_code != 0:
            text = data[-4000:].decode("utf-8", errors="replace")
            large = _TOO_LARGE.search(text)
            if exit_code == TOO_LARGE_EXIT and large:
                raise _too_large(int(large.group(1)))
            raise _failed(base_commit, exit_code, text)
        return data

    return _decoded(produce)
