"""Replies the edit agent could not use (issue 37): a reply cut at the cap is continued, near-miss formats are read
where one reading exists, the prompt fits the model's context, and a rollout ending on an unusable reply says why."""

from __future__ import annotations

import pytest

from agentbon.agent import EditAgent
from agentbon.agent.apply import apply_edits
from agentbon.agent.base import join_pieces
from agentbon.agent.blocks import parse_reply
from agentbon.agent.edit import estimate_tokens
from agentbon.config import AgentConfig
from agentbon.errors import ContextLengthExceeded
from agentbon.testing import ScriptedModel

FILES = {"calc/ops.py", "calc/util.py", "calc/__init__.py", "docs/notes.md", "README.md", "tests/test_ops.py"}
SHOWN = ["calc/ops.py", "calc/util.py"]
SEARCH = "    check(a, b)\n    return a - b\n"
FIXED = "    check(a, b)\n    return a + b\n"
GOOD = f"calc/ops.py\n<<<<<<< SEARCH\n{SEARCH}=======\n{FIXED}>>>>>>> REPLACE\n"


class CapModel(ScriptedModel):
    """A scripted model whose replies marked ``cut`` stop at max_tokens (``finish_reason`` "length")."""

    def __init__(self, replies, cut=(), **kwargs):
        super().__init__(replies, **kwargs)
        self.cut = set(cut)

    def chat(self, messages, *, seed=None, **sampling):
        response = super().chat(messages, seed=seed, **sampling)
        if len(self.calls) - 1 in self.cut or "all" in self.cut:
            response = response.model_copy(update={"finish_reason": "length"})
        return response


# ------------------------------------------------------------------------------------------------ continuation


def test_a_reply_cut_at_the_cap_is_continued_and_applies(task, sandbox, spec):
    head = "The subtraction is wrong.\n\ncalc/ops.py\n<<<<<<< SEARCH\n    check(a, b)\n    return a - b\n===="
    tail = "===\n    check(a, b)\n    return a + b\n>>>>>>> REPLACE\n"
    model = CapModel([head, tail], cut={0})
    result = EditAgent(AgentConfig()).run(task, sandbox, model, spec)
    assert (result.status, result.steps, result.malformed, result.unusable) == ("submitted", 2, 0, None)
    assert result.usage.calls == 2 and result.usage.completion_tokens == len(head.split()) + len(tail.split())
    assert "+    return a + b" in sandbox.diff()
    # The continuation call saw the partial reply as the assistant's turn, then the request to go on.
    sent = model.calls[1]["messages"]
    assert sent[-2] == {"role": "assistant", "content": head} and sent[-1]["role"] == "user"
    assert "cut off at the length limit" in sent[-1]["content"]
    assert model.calls[0]["seed"] != model.calls[1]["seed"]  # a call of its own, with its own seed
    kinds = [(m["role"], m["extra"].get("kind"), m["extra"].get("continuation")) for m in result.messages]
    assert kinds[2:] == [("assistant", None, None), ("user", "continue", 1), ("assistant", None, 1),
                         ("user", "edit_result", None)]  # fmt: skip
    assert result.messages[2]["extra"]["finish_reason"] == "length" and result.messages[4]["extra"]["step"] == 2


# What the embedded model (Qwen2.5-Coder 1.5B, llama.cpp) answered with max_tokens 90: cut at a bare ">>>>>>>", then
# asked to go on, the same block again, ending the same way.
REAL_HEAD = (
    "The problem is that the `add` function in `calc/ops.py` subtracts instead of adding. To fix this, we need to "
    "change the subtraction operation to addition.\n\nHere's the fix as edit blocks:\n\ncalc/ops.py\n<<<<<<< SEARCH\n"
    "def add(a, b):\n    check(a, b)\n    return a - b\n=======\ndef add(a, b):\n    check(a, b)\n    return a + b\n"
    ">>>>>>>"
)
REAL_TAIL = REAL_HEAD[REAL_HEAD.index("calc/ops.py\n") :]


def test_the_embedded_models_cut_and_repeated_block_applies(task, sandbox, spec):
    model = CapModel([REAL_HEAD, REAL_TAIL], cut={0})
    result = EditAgent(AgentConfig()).run(task, sandbox, model, spec)
    assert (result.status, result.steps, result.malformed) == ("submitted", 2, 0)
    assert result.messages[-1]["extra"]["edits"] == [{"path": "calc/ops.py", "applied": True, "how": "exact"}]


def test_a_bare_close_marker_ends_a_block():
    (block,) = parse_reply(f"calc/ops.py\n<<<<<<< SEARCH\n{SEARCH}=======\n{FIXED}>>>>>>>\n").blocks
    assert (block.search, block.replace) == (SEARCH, FIXED)


def test_a_continuation_that_repeats_the_cut_line_is_joined_without_the_repeat(task, sandbox, spec):
    head = "calc/ops.py\n<<<<<<< SEARCH\n    check(a, b)\n    return a - b\n=======\n    check(a, b)\n    retu"
    tail = "    return a + b\n>>>>>>> REPLACE\n"
    result = EditAgent(AgentConfig()).run(task, sandbox, CapModel([head, tail], cut={0}), spec)
    assert result.status == "submitted"
    assert "def add(a, b):\n    check(a, b)\n    return a + b\n" in sandbox.read_file("calc/ops.py").decode()


@pytest.mark.parametrize(
    ("head", "tail", "whole"),
    [
        ("a\nbc", "d\n", "a\nbcd\n"),  # goes on mid-line
        ("a\n    return x -", "    return x - y\n", "a\n    return x - y\n"),  # restarts the cut line
        ("first line\nsecond line is long\n", "second line is long\nthird\n", "first line\nsecond line is long\nthird\n"),
        ("```python\ndef f():\n", "```python\n    return 1\n```\n", "```python\ndef f():\n    return 1\n```\n"),
        ("x = 1\n", "x = 2\n", "x = 1\nx = 2\n"),  # a short repeat is not taken for an overlap
        ("a\ncalc/ops.py", "\n<<<<<<< SEARCH\n", "a\ncalc/ops.py\n<<<<<<< SEARCH\n"),
        ("a\ncalc/ops.py", "<<<<<<< SEARCH\n", "a\ncalc/ops.py\n<<<<<<< SEARCH\n"),  # a marker starts its line
        ("    return a + b", ">>>>>>>\n", "    return a + b\n>>>>>>>\n"),
        ("Fix:\n\ncalc/ops.py", "Here's the continuation:\n\n```python\ndef f():\n```\n",
         "Fix:\n\ncalc/ops.py\n```python\ndef f():\n```\n"),  # what the embedded model answered
        ("for x in y:\n", "    continue\n", "for x in y:\n    continue\n"),  # code, not an announcement
        ("a\n", "Continuing from where I stopped.\nb\n", "a\nb\n"),
    ],
)
def test_join_pieces(head, tail, whole):
    assert join_pieces(head, tail) == whole


def test_continuations_count_against_the_step_limit_and_are_bounded(task, sandbox, spec):
    # A model that echoes the file forever: every piece is cut.
    echo = "calc/ops.py\n<<<<<<< SEARCH\n" + "    check(a, b)\n" * 50
    model = CapModel([echo], cut={"all"}, cycle=True)
    result = EditAgent(AgentConfig(continuations=2, step_limit=20)).run(task, sandbox, model, spec)
    # Two replies (the first and one repair), each the first call and 2 continuations; then the malformed limit.
    assert (result.status, result.steps, result.malformed, result.unusable) == ("format_error", 6, 2, "cut_off")
    assert len(model.calls) == 6 == result.usage.calls
    result = EditAgent(AgentConfig(continuations=5, step_limit=4)).run(task, sandbox, CapModel([echo], cut={"all"},
                                                                                              cycle=True), spec)
    assert (result.status, result.steps, result.unusable) == ("step_limit", 4, "cut_off")
    assert [m["extra"].get("kind") for m in result.messages][-2:] == [None, "format_error"]  # the partial was read


def test_the_token_limit_holds_over_continuations(task, sandbox, spec):
    echo = "calc/ops.py\n<<<<<<< SEARCH\n" + "    check(a, b)\n" * 50
    config = AgentConfig(continuations=50, step_limit=100, malformed_limit=50, token_limit=3000)
    result = EditAgent(config).run(task, sandbox, CapModel([echo], cut={"all"}, cycle=True), spec)
    assert result.status == "token_limit" and result.unusable == "cut_off"
    assert result.usage.prompt_tokens + result.usage.completion_tokens < 3000 + 2 * estimate_tokens(echo) * 20


def test_a_continuation_longer_than_the_context_ends_the_continuing_not_the_reply(task, sandbox, spec):
    head = f"calc/ops.py\n<<<<<<< SEARCH\n{SEARCH}=======\n{FIXED}>>>>>>> REPLACE\n\nThis also"
    model = CapModel([head, ContextLengthExceeded("HTTP 400: context length exceeded")], cut={0})
    result = EditAgent(AgentConfig()).run(task, sandbox, model, spec)
    assert (result.status, result.steps) == ("submitted", 2)  # the refused call counts; the complete block applies
    assert [m["extra"].get("kind") for m in result.messages][2:] == [None, "edit_result"]
    assert "context length" in result.messages[2]["extra"]["continuation_refused"]


def test_no_continuation_without_a_cut(task, sandbox, spec):
    model = CapModel([GOOD])
    assert EditAgent(AgentConfig()).run(task, sandbox, model, spec).steps == 1


# ------------------------------------------------------------------------------------------------ near misses


def test_a_block_missing_its_separator_is_split_where_the_first_line_comes_again(sandbox):
    reply = f"```\ncalc/ops.py\n<<<<<<< SEARCH\n{SEARCH}{FIXED}>>>>>>> REPLACE\n```\n"
    parsed = parse_reply(reply)
    assert parsed.blocks == [] and len(parsed.unsplit) == 1 and parsed.problems == []
    (outcome,) = apply_edits(sandbox, parsed.unsplit, FILES, SHOWN)
    assert (outcome.path, outcome.applied, outcome.how) == ("calc/ops.py", True, "exact")
    assert "def add(a, b):\n    check(a, b)\n    return a + b\n" in sandbox.read_file("calc/ops.py").decode()


def test_a_block_missing_its_separator_without_a_path_goes_to_the_one_file_it_splits_in(sandbox):
    reply = f"<<<<<<< SEARCH\n{SEARCH}{FIXED}>>>>>>> REPLACE\n"
    (outcome,) = apply_edits(sandbox, parse_reply(reply).unsplit, FILES, SHOWN)
    assert (outcome.path, outcome.applied) == ("calc/ops.py", True)


def test_a_block_missing_its_separator_that_splits_two_ways_is_refused(sandbox):
    sandbox.write_file("calc/consts.py", "A = 1\nA = 1\nB = 2\n")
    reply = "calc/consts.py\n<<<<<<< SEARCH\nA = 1\nA = 1\nA = 1\nA = 2\n>>>>>>> REPLACE\n"
    (outcome,) = apply_edits(sandbox, parse_reply(reply).unsplit, FILES | {"calc/consts.py"}, SHOWN)
    assert not outcome.applied and outcome.cause == "malformed_block"
    assert "could be split at 2 places" in outcome.how and "=======" in outcome.how
    assert sandbox.read_file("calc/consts.py").decode() == "A = 1\nA = 1\nB = 2\n"


def test_a_block_missing_its_separator_with_only_new_code_is_not_split(sandbox):
    reply = "calc/ops.py\n<<<<<<< SEARCH\n    check(a, b)\n    return a + b\n>>>>>>> REPLACE\n"
    (outcome,) = apply_edits(sandbox, parse_reply(reply).unsplit, FILES, SHOWN)
    assert not outcome.applied and "no split" in outcome.how


def test_a_fenced_block_missing_its_replace_line_ends_at_the_fence(sandbox):
    reply = f"Fix:\n\n```\ncalc/ops.py\n<<<<<<< SEARCH\n{SEARCH}=======\n{FIXED}```\n\nThat is all.\n"
    parsed = parse_reply(reply)
    assert parsed.problems == [] and [(b.path, b.search, b.replace) for b in parsed.blocks] == [
        ("calc/ops.py", SEARCH, FIXED)
    ]
    (outcome,) = apply_edits(sandbox, parsed.blocks, FILES, SHOWN)
    assert outcome.applied


@pytest.mark.parametrize(
    "reply",
    [
        f"Fix:\n\n```python\ncalc/ops.py\n{SEARCH}=======\n{FIXED}>>>>>>> REPLACE\n```\n",
        f"Fix in `calc/ops.py`:\n\n```python\n{SEARCH}=======\n{FIXED}>>>>>>> REPLACE\n```\n",
    ],
)
def test_a_fenced_block_missing_its_search_line_starts_at_the_fence(sandbox, reply):
    parsed = parse_reply(reply)
    assert parsed.problems == [] and [(b.search, b.replace) for b in parsed.blocks] == [(SEARCH, FIXED)]
    (outcome,) = apply_edits(sandbox, parsed.blocks, FILES, SHOWN)
    assert (outcome.path, outcome.applied) == ("calc/ops.py", True)


def test_a_block_missing_its_search_line_outside_a_fence_is_not_guessed():
    assert parse_reply(f"calc/ops.py\n{SEARCH}=======\n{FIXED}>>>>>>> REPLACE\n").blocks == []
    # After a complete block, an unopened one in its own fence is read, in the reply's order.
    two = f"{GOOD}\n```\ncalc/util.py\n    for x in args:\n=======\n    for x in list(args):\n>>>>>>> REPLACE\n```\n"
    assert [b.path for b in parse_reply(two).blocks] == ["calc/ops.py", "calc/util.py"]


def test_a_bare_block_missing_its_replace_line_is_not_guessed():
    reply = f"calc/ops.py\n<<<<<<< SEARCH\n{SEARCH}=======\n{FIXED}\nThat fixes it.\n"
    parsed = parse_reply(reply)
    assert parsed.blocks == [] and "no >>>>>>> REPLACE line" in parsed.problems[0]
    two = f"calc/ops.py\n<<<<<<< SEARCH\n{SEARCH}=======\n{FIXED}\ncalc/util.py\n{GOOD.split(chr(10), 1)[1]}"
    parsed = parse_reply(two)
    assert len(parsed.blocks) == 1 and "no >>>>>>> REPLACE line" in parsed.problems[0]


@pytest.mark.parametrize("path", ["./calc/ops.py", "a/calc/ops.py", "src/calc/ops.py", "/testbed/calc/ops.py",
                                  "ops.py", "`calc/ops.py`"])  # fmt: skip
def test_a_path_from_another_root_names_the_one_file(sandbox, path):
    reply = f"{path}\n<<<<<<< SEARCH\n{SEARCH}=======\n{FIXED}>>>>>>> REPLACE\n"
    (outcome,) = apply_edits(sandbox, parse_reply(reply, "/testbed").blocks, FILES, SHOWN, "/testbed")
    assert (outcome.path, outcome.applied) == ("calc/ops.py", True)


def test_a_path_that_fits_two_files_is_refused_naming_both(sandbox):
    sandbox.write_file("lib/calc/ops.py", "x = 1\n")
    reply = f"ops.py\n<<<<<<< SEARCH\n{SEARCH}=======\n{FIXED}>>>>>>> REPLACE\n"
    (outcome,) = apply_edits(sandbox, parse_reply(reply).blocks, FILES | {"lib/calc/ops.py"}, [])
    assert not outcome.applied and outcome.cause == "unknown_file"
    assert "could be any of calc/ops.py, lib/calc/ops.py" in outcome.how


# ------------------------------------------------------------------------------------------------ causes


@pytest.mark.parametrize(
    ("reply", "cause", "says"),
    [
        ("The code looks fine to me.", "no_edit_blocks", "no edit blocks"),
        ("calc/ops.py\n<<<<<<< SEARCH\n    return a - b\n", "malformed_block", "no ======= line"),
        ("calc/nowhere.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n", "unknown_file", "no such file"),
        ("calc/ops.py\n<<<<<<< SEARCH\n    return a minus b\n=======\n    return a + b\n>>>>>>> REPLACE\n",
         "search_not_found", "SEARCH text not found"),
        ("calc/util.py\n<<<<<<< SEARCH\n=======\nx = 1\n>>>>>>> REPLACE\n", "not_applied", "SEARCH is empty"),
    ],
)  # fmt: skip
def test_a_rollout_ending_on_an_unusable_reply_records_why(task, sandbox, spec, reply, cause, says):
    model = ScriptedModel([reply, reply])
    result = EditAgent(AgentConfig()).run(task, sandbox, model, spec)
    assert (result.status, result.unusable) == ("format_error", cause)
    assert says in result.messages[-1]["content"] and result.messages[-1]["extra"]["cause"] == cause


def test_a_cut_reply_that_stays_cut_is_cut_off_and_a_repair_that_applies_clears_it(task, sandbox, spec):
    result = EditAgent(AgentConfig(continuations=0)).run(task, sandbox, CapModel(["calc/ops.py\n<<<<<<"] * 2,
                                                                                 cut={"all"}), spec)
    assert (result.status, result.unusable) == ("format_error", "cut_off")
    result = EditAgent(AgentConfig()).run(task, sandbox, ScriptedModel(["nothing", GOOD]), spec)
    assert (result.status, result.malformed, result.unusable) == ("submitted", 1, None)


def test_a_limit_after_an_unusable_reply_keeps_its_cause(task, sandbox, spec):
    result = EditAgent(AgentConfig(step_limit=1)).run(task, sandbox, ScriptedModel(["nothing"]), spec)
    assert (result.status, result.unusable) == ("step_limit", "no_edit_blocks")


# ------------------------------------------------------------------------------------------------ prompt budget


class SmallContext(ScriptedModel):
    context_window = 1200
    defaults = {"max_tokens": 200}


def test_the_prompt_is_trimmed_to_the_models_context(task, sandbox, spec):
    big = "".join(f"def f{i}(a, b):\n    return a - b  # subtracts\n\n\n" for i in range(300))
    sandbox.write_file("calc/more.py", big)
    sandbox.exec("git add -A && git -c user.name=t -c user.email=t@t commit -qm more")
    model = SmallContext([GOOD])
    result = EditAgent(AgentConfig(continuations=1)).run(task, sandbox, model, spec)
    instance = result.messages[1]
    budget = 1200 - 200 * 2
    assert instance["extra"]["prompt_budget"] == budget and instance["extra"]["trimmed_lines"] > 0
    assert estimate_tokens(result.messages[0]["content"]) + estimate_tokens(instance["content"]) <= budget
    assert result.status == "submitted"  # the file the fix goes in is still shown
    unbounded = EditAgent(AgentConfig()).run(task, sandbox, ScriptedModel(["no edit"] * 2), spec).messages[1]
    assert "prompt_budget" not in unbounded["extra"] and len(unbounded["content"]) > len(instance["content"])
