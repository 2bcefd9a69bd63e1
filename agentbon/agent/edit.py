"""The one-shot edit agent (Agentless style): show the model the relevant files, apply its SEARCH/REPLACE edits.

Localisation needs no model (``localise``: files ranked against the problem statement, test files left out
unless named). The model answers with edit blocks (``blocks``); they are applied in the sandbox through
``read_file``/``write_file``, exactly where the SEARCH text occurs, else ignoring whitespace. Each block's
outcome goes into the trajectory. When no block applies the errors are fed back and the model tries again,
until ``malformed_limit`` failed replies (2 by default; status ``format_error``); once at least one edit applies the
rollout is ``submitted``. Step, token and time limits hold as in the bash agent.

A reply cut at ``max_tokens`` is continued (``agent.continuations`` more calls) and read whole. The prompt is
fitted to the model's context (``fit_context``). A rollout that ends on a reply it could not use records why
(``Conversation.unusable``, ``reply_cause``).

Like the bash agent, the prompts see only the problem statement (and hints where asked for), never the
task record with its hidden tests and gold patch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, replace
from typing import Any

from agentbon.agent.apply import Outcome, apply_edits, apply_snippets
from agentbon.agent.base import AgentExit, Conversation, FormatError, Submitted, render
from agentbon.agent.blocks import ParsedReply, parse_reply
from agentbon.agent.definitions import snippets
from agentbon.agent.localise import Context, localise, tree
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
            system = render(self.config, "edit_system.j2", **variables)
            budget = self.prompt_budget(model)
            context, instance, trimmed = fit_context(
                context, lambda c: self.instance(c, variables), budget - estimate_tokens(system) if budget else None
            )
            conv.add("system", system, kind="system")
            fitted = {"prompt_budget": budget, "trimmed_lines": trimmed} if budget else {}
            conv.add(
                "user",
                instance,
                kind="instance",
                context_files=context.scores,
                localise_s=round(conv.elapsed(), 3),
                **fitted,
            )
            tracked = set(context.files)
            request = render(self.config, "edit_continue.j2")
            while True:
                reply = conv.query_whole(model, self.config.continuations, request)
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

    def instance(self, context: Context, variables: dict[str, Any]) -> str:
        """The first user message: the problem, the repository's files and the shown ones."""
        shown = [f.path for f in context.shown]
        return render(
            self.config, "edit_instance.j2", files=context.shown, tree=tree(context.files, shown), **variables
        )

    def prompt_budget(self, model: Model) -> int | None:
        """Tokens the first prompt may take: the model's context less the reply (``max_tokens``) and its
        continuations, never less than the context less one reply; None where the context is not known."""
        ctx = getattr(model, "context_window", None)
        max_tokens = self.sampling.max_tokens if self.sampling else getattr(model, "defaults", {}).get("max_tokens")
        if not isinstance(ctx, int) or not isinstance(max_tokens, int):
            return None
        whole = ctx - max_tokens * (1 + self.config.continuations)
        return whole if whole >= ctx // 2 else ctx - max_tokens

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
        blocks = parsed.blocks + parsed.unsplit
        outcomes = apply_edits(sandbox, blocks, tracked, shown, sandbox.workdir) if blocks else []
        if not parsed.blocks and not any(o.applied for o in outcomes):
            fallback = apply_snippets(sandbox, snippets(reply), tracked, shown, sandbox.workdir)
            if any(o.applied for o in fallback) or not outcomes:
                outcomes = fallback
            if any(o.applied for o in outcomes):
                syntax_error = ""
        applied = [o for o in outcomes if o.applied]
        extra: dict[str, Any] = {"edits": [{k: v for k, v in asdict(o).items() if v or k != "cause"} for o in outcomes]}
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
        conv.unusable = reply_cause(conv.cut_off, parsed, outcomes)
        extra["cause"] = conv.unusable
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


CAUSE_ORDER = ("malformed_block", "unknown_file", "search_not_found", "not_applied")
"""Which cause names a reply whose edits failed for several reasons: the first of these among them."""


def reply_cause(cut_off: bool, parsed: ParsedReply, outcomes: list[Outcome]) -> str:
    """Why a reply could not be used, as an ``UnusableCause``: cut at the cap (after its continuations) first, then
    blocks that could not be read, then the first of ``CAUSE_ORDER`` among its edits' failures."""
    if cut_off:
        return "cut_off"
    if parsed.problems:
        return "malformed_block"
    if not outcomes:
        return "no_edit_blocks"
    causes = {o.cause for o in outcomes}
    return next((c for c in CAUSE_ORDER if c in causes), "not_applied")


def estimate_tokens(text: str) -> int:
    """A tokenizer-free upper estimate of a text's tokens: 3.3 characters a token. The edit agent's first prompts on
    the ten tasks of tasks/real ran 3.46 to 4.28 characters a token with the embedded model's (Qwen2.5) tokenizer."""
    return len(text) * 10 // 33 + 1


def fit_context(
    context: Context, render_instance: Callable[[Context], str], budget: int | None
) -> tuple[Context, str, int]:
    """The context and its rendered prompt, with the shown files cut from the end (the last file's window first,
    a file left with fewer than 20 lines dropped) until the prompt's estimate fits ``budget``; (context, prompt, lines
    cut). None: as it is."""
    text = render_instance(context)
    cut = 0
    while budget is not None and estimate_tokens(text) > budget and context.shown:
        last = context.shown[-1]
        lines = last.text.split("\n")
        excess = (estimate_tokens(text) - budget) * 33 // 10
        keep = len(lines)
        while keep > 0 and excess > 0:
            keep -= 1
            excess -= len(lines[keep]) + 1
        kept = keep if keep >= min(20, len(lines)) and keep > 0 else 0
        shown = context.shown[:-1]
        if kept:
            shown.append(replace(last, text="\n".join(lines[:kept]), end=last.start + kept - 1))
        cut += len(lines) - kept
        context = replace(context, shown=shown)
        text = render_instance(context)
    return context, text, cut
