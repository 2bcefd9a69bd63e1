"""The one-shot edit agent (Agentless style): show the model the relevant files, apply its SEARCH/REPLACE edits.

Localisation needs no model (``localise``: files ranked against the problem statement, test files left out
unless named). The model answers with edit blocks (``blocks``); they are applied in the sandbox through
``read_file``/``write_file``, exactly where the SEARCH text occurs, else ignoring whitespace. Each block's
outcome goes into the trajectory. When no block applies the errors are fed back and the model tries again,
until ``malformed_limit`` failed replies (2 by default; status ``format_error``); once at least one edit applies the
rollout is ``submitted``. Step, token and time limits hold as in the bash agent.

Like the bash agent, the prompts see only the problem statement (and hints where asked for), never the
task record with its hidden tests and gold patch.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from agentbon.agent.apply import Outcome, apply_edits, apply_snippets  # noqa: F401 (Outcome: re-exported)
from agentbon.agent.base import AgentExit, Conversation, FormatError, Submitted, render
from agentbon.agent.blocks import parse_reply
from agentbon.agent.definitions import snippets
from agentbon.agent.localise import localise, tree
from agentbon.config import AgentConfig, ModelConfig
from agentbon.errors import ContextLengthExceeded, ModelError
from agentbon.protocols import AgentResult, Model, Sandbox
from agentbon.types import RolloutSpec, Task


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
                self.attempt(conv, sandbox, reply, tracked, [f.path for f in context.shown])
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

    def attempt(self, conv: Conversation, sandbox: Sandbox, reply: str, tracked: set[str], shown: list[str]) -> None:
        """Apply one reply's edits; raise ``Submitted`` when any applied, feed the errors back when none did.

        Well-formed blocks are applied (those of a reply cut off mid-block too); a reply without any falls
        back to whole definitions from its code blocks.
        """
        parsed = parse_reply(reply, sandbox.workdir)
        syntax_error = "; ".join(parsed.problems)
        outcomes = apply_edits(sandbox, parsed.blocks, tracked, shown, sandbox.workdir) if parsed.blocks else []
        if not parsed.blocks:
            outcomes = apply_snippets(sandbox, snippets(reply), tracked, shown, sandbox.workdir)
            if any(o.applied for o in outcomes):
                syntax_error = ""
        applied = [o for o in outcomes if o.applied]
        extra: dict[str, Any] = {"edits": [asdict(o) for o in outcomes]}
        if parsed.problems:
            extra["block_problems"] = parsed.problems
        if applied:
            summary = f"{len(applied)} of {len(outcomes)} edits applied to " + ", ".join(
                sorted({o.path for o in applied})
            )
            conv.add(
                "user",
                render(
                    self.config,
                    "edit_feedback.j2",
                    outcomes=outcomes,
                    syntax_error=syntax_error,
                    done=True,
                    cut_off=False,
                ),
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
        if conv.malformed >= self.config.malformed_cap():
            raise FormatError(
                syntax_error
                or ("no edit blocks in the reply" if not outcomes else f"none of {len(outcomes)} edits applied")
            )
