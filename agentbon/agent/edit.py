"""The one-shot edit agent (Agentless style): show the model the relevant files, apply its SEARCH/REPLACE edits.

Localisation needs no model (``localise``: files ranked against the problem statement, test files left out
unless named). The model answers with edit blocks (``blocks``); they are applied in the sandbox through
``read_file``/``write_file``, exactly where the SEARCH text occurs, else ignoring whitespace. Each block's
outcome goes into the trajectory. When no block applies the errors are fed back and the model tries again,
until ``malformed_limit`` failed replies (status ``format_error``); once at least one edit applies the
rollout is ``submitted``. Step, token and time limits hold as in the bash agent.

Like the bash agent, the prompts see only the problem statement (and hints where asked for), never the
task record with its hidden tests and gold patch.
"""

from __future__ import annotations

import posixpath
from dataclasses import asdict, dataclass
from typing import Any

from agentbon.agent.base import AgentExit, Conversation, FormatError, Submitted, render
from agentbon.agent.blocks import BlockSyntaxError, EditBlock, apply_block, parse_blocks
from agentbon.agent.localise import localise, tree
from agentbon.config import AgentConfig, ModelConfig
from agentbon.errors import ContextLengthExceeded, ModelError
from agentbon.protocols import AgentResult, Model, Sandbox
from agentbon.types import RolloutSpec, Task


@dataclass
class Outcome:
    """What became of one edit block."""

    path: str
    applied: bool
    how: str
    """``exact``, ``whitespace`` or ``created`` when applied; the reason when not."""


def apply_edits(sandbox: Sandbox, blocks: list[EditBlock], tracked: set[str]) -> list[Outcome]:
    """Apply blocks in order (several on one file chain); write each changed file once; one outcome per block."""
    texts: dict[str, str] = {}
    outcomes: list[Outcome] = []
    for block in blocks:
        path = posixpath.normpath(block.path)
        if path.startswith(("/", "../")) or path == "..":
            outcomes.append(Outcome(block.path, False, "the path is outside the repository"))
            continue
        if path not in texts:
            if path in tracked:
                try:
                    texts[path] = sandbox.read_file(path).decode("utf-8")
                except UnicodeDecodeError:
                    outcomes.append(Outcome(path, False, "not a UTF-8 text file"))
                    continue
                except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as e:
                    outcomes.append(Outcome(path, False, f"cannot read {path}: {type(e).__name__}"))
                    continue
            elif not block.search.strip():
                texts[path] = block.replace
                outcomes.append(Outcome(path, True, "created"))
                continue
            else:
                outcomes.append(Outcome(path, False, f"no such file in the repository: {path}"))
                continue
        if not block.search.strip():
            outcomes.append(Outcome(path, False, f"SEARCH is empty but {path} exists; copy the lines to change"))
            continue
        try:
            texts[path], how = apply_block(texts[path], EditBlock(path, block.search, block.replace))
            outcomes.append(Outcome(path, True, how))
        except ValueError as e:
            outcomes.append(Outcome(path, False, str(e)))
    changed = {o.path for o in outcomes if o.applied}
    for path in changed:
        sandbox.write_file(path, texts[path])
    return outcomes


class EditAgent:
    """One-shot edit agent with a short repair loop; ``run`` drives one rollout."""

    def __init__(self, config: AgentConfig, sampling: ModelConfig | None = None):
        self.config = config
        self.sampling = sampling
        """Sampling sent with every call; None leaves it to the model client's configured defaults."""

    def run(self, task: Task, sandbox: Sandbox, model: Model, spec: RolloutSpec) -> AgentResult:
        """Localise, ask for edits, apply them; retry with the errors while no edit applies."""
        conv = Conversation(self.config, self.sampling, spec.seed)
        try:
            context = localise(
                sandbox, task.problem_statement, self.config, timeout=max(1.0, min(60.0, conv.remaining_s()))
            )
            variables = self.prompt_variables(task, sandbox)
            conv.add("system", render(self.config, "edit_system.j2", **variables), kind="system")
            conv.add(
                "user",
                render(
                    self.config,
                    "edit_instance.j2",
                    files=context.shown,
                    tree=tree(context.files, [f.path for f in context.shown]),
                    **variables,
                ),
                kind="instance",
                context_files=context.scores,
                localise_s=round(conv.elapsed(), 3),
            )
            tracked = set(context.files)
            while True:
                reply = conv.query(model)
                self.attempt(conv, sandbox, reply, tracked)
        except AgentExit as e:
            return conv.result(e.status, type(e).__name__, str(e))
        except ContextLengthExceeded as e:
            return conv.result("token_limit", type(e).__name__, str(e))
        except ModelError as e:
            return conv.result("agent_error", type(e).__name__, str(e))
        except BaseException as e:
            conv.attach_partial(e)
            raise

    def prompt_variables(self, task: Task, sandbox: Sandbox) -> dict[str, Any]:
        """What the templates may use: deliberately not the task record (it holds hidden tests and the gold patch)."""
        return {
            "problem_statement": task.problem_statement.strip(),
            "hints": task.hints.strip() if self.config.show_hints else "",
            "workdir": sandbox.workdir,
        }

    def attempt(self, conv: Conversation, sandbox: Sandbox, reply: str, tracked: set[str]) -> None:
        """Apply one reply's edits; raise ``Submitted`` when any applied, feed the errors back when none did."""
        syntax_error = ""
        try:
            blocks = parse_blocks(reply, sandbox.workdir)
        except BlockSyntaxError as e:
            blocks, syntax_error = [], str(e)
        outcomes = apply_edits(sandbox, blocks, tracked) if blocks else []
        applied = [o for o in outcomes if o.applied]
        extra = {"edits": [asdict(o) for o in outcomes]}
        if applied:
            summary = f"{len(applied)} of {len(outcomes)} edits applied to " + ", ".join(
                sorted({o.path for o in applied})
            )
            conv.add(
                "user",
                render(self.config, "edit_feedback.j2", outcomes=outcomes, syntax_error="", done=True, cut_off=False),
                kind="edit_result",
                **extra,
            )
            raise Submitted(summary)
        conv.malformed += 1
        feedback = render(
            self.config,
            "edit_feedback.j2",
            outcomes=outcomes,
            syntax_error=syntax_error,
            done=False,
            cut_off=conv.cut_off,
        )
        conv.add("user", feedback, kind="format_error", malformed=conv.malformed, **extra)
        if conv.malformed >= self.config.malformed_limit:
            raise FormatError(
                syntax_error
                or ("no edit blocks in the reply" if not outcomes else f"none of {len(outcomes)} edits applied")
            )
