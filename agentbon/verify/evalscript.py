"""The SWE-bench harness's evaluation script, read as text: its test command, and a copy without the test patch.

An eval script (as the harness writes them, and as SWE-bench 5.x datasets carry them) activates the
``testbed`` environment, resets the test files, applies the test patch from a heredoc, runs the test
command between the ``Start Test Output`` / ``End Test Output`` markers, and resets the test files again.
Selection evidence runs the same script without the heredoc, and without the command-line directives that
name files only the test patch creates (they do not exist before it; docs/swebench.md). The second check runs
the script's setup part only, everything before the test command (docs/security.md, "Second check").
"""

from __future__ import annotations

import re

from agentbon.verify.testpatch import module_forms, patch_facts

START = ">>>>> Start Test Output"
END = ">>>>> End Test Output"
"""The harness's markers around the test command's output (``swebench.harness.constants``)."""
_HEREDOC = re.compile(r"\bgit\s+apply\b.*<<-?\s*(['\"]?)(\w+)\1\s*$")


def command_span(eval_script: str) -> tuple[int, int] | None:
    """Indexes (start, end) of the lines strictly between the markers, or None when the script lacks them."""
    lines = eval_script.split("\n")
    start = next((i for i, line in enumerate(lines) if START in line), None)
    end = next((i for i, line in enumerate(lines) if END in line and start is not None and i > start), None)
    return None if start is None or end is None else (start + 1, end)


def test_command(eval_script: str) -> str | None:
    """The lines between the markers (the test command and its directives), or None without markers."""
    span = command_span(eval_script)
    return None if span is None else "\n".join(eval_script.split("\n")[span[0] : span[1]]).strip()


def setup_part(eval_script: str) -> str | None:
    """The lines before the start marker (environment, ``cd``, the reset and the test patch), or None without
    markers."""
    span = command_span(eval_script)
    return None if span is None else "\n".join(eval_script.split("\n")[: span[0] - 1]) + "\n"


def _drop_heredoc_apply(lines: list[str]) -> list[str] | None:
    for i, line in enumerate(lines):
        found = _HEREDOC.search(line)
        if found:
            delimiter = found.group(2)
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == delimiter), None)
            if end is not None:
                return lines[:i] + lines[end + 1 :]
    return None


def without_test_patch(eval_script: str, test_patch: str) -> tuple[str | None, str]:
    """The eval script that runs the same test command at base, or None with why it cannot be made."""
    lines = _drop_heredoc_apply(eval_script.split("\n"))
    if lines is None:
        return None, "the eval script applies no test patch from a heredoc that agentbon recognises"
    script = "\n".join(lines)
    span = command_span(script)
    if span is None:
        return None, "the eval script has no test output markers"
    facts = patch_facts(test_patch)
    created = sorted({form for file in facts.added_files for form in module_forms(file)}, key=len, reverse=True)
    kept = sorted({form for file in facts.changed_files - facts.added_files for form in module_forms(file)})
    command = lines[span[0] : span[1]]
    removed = False
    for form in created:
        token = re.compile(rf"(?<=\s){re.escape(form)}(?=\s|$)")
        for k, line in enumerate(command):
            command[k], n = token.subn("", line)
            removed = removed or n > 0
    if removed and not any(re.search(rf"(?<=\s){re.escape(f)}(?=\s|$)", line) for f in kept for line in command):
        return None, "every test file the test command names is created by the test patch"
    lines[span[0] : span[1]] = [re.sub(r"[ \t]+$", "", line) for line in command]
    return "\n".join(lines), ""
