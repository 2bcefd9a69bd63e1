"""The one-shot edit agent: localisation shown to the model, edits applied, bad blocks fed back."""

from __future__ import annotations

import json

from agentbon.agent import BashAgent, EditAgent, make_agent
from agentbon.config import AgentConfig
from agentbon.testing import ScriptedModel


def edit(path: str, search: str, replace: str) -> str:
    return f"The subtraction is wrong.\n\n```\n{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n```\n"


GOOD = edit("calc/ops.py", "    check(a, b)\n    return a - b\n", "    check(a, b)\n    return a + b\n")
BAD = edit("calc/ops.py", "    return a minus b\n", "    return a + b\n")


def test_make_agent_chooses_by_type():
    assert isinstance(make_agent(AgentConfig(type="bash")), BashAgent)
    assert isinstance(make_agent(AgentConfig()), EditAgent)  # edit is the default


def test_the_model_sees_the_relevant_files_and_the_tree(task, sandbox, spec):
    model = ScriptedModel([GOOD])
    result = EditAgent(AgentConfig()).run(task, sandbox, model, spec)
    prompt = result.messages[1]["content"]
    assert '<file path="calc/ops.py" lines="1-10 of 10">' in prompt and "    return a - b" in prompt
    assert '<file path="calc/util.py"' in prompt  # imported by ops.py
    assert '<file path="tests/test_ops.py"' not in prompt  # tests are not shown unless named
    assert "tests/test_ops.py" in prompt  # ...but they are in the tree
    assert list(result.messages[1]["extra"]["context_files"])[0] == "calc/ops.py"


def test_an_exact_edit_is_applied_and_submitted(task, sandbox, spec):
    result = EditAgent(AgentConfig()).run(task, sandbox, ScriptedModel([GOOD]), spec)
    assert (result.status, result.exit_status, result.steps, result.malformed) == ("submitted", "Submitted", 1, 0)
    assert (
        "+    return a + b" in sandbox.diff()
        and "return a - b\n\n\ndef sub" not in sandbox.read_file("calc/ops.py").decode()
    )
    last = result.messages[-1]
    assert last["extra"]["kind"] == "edit_result" and last["extra"]["edits"] == [
        {"path": "calc/ops.py", "applied": True, "how": "exact"}
    ]
    assert last["extra"]["exit_message"] == "1 of 1 edits applied to calc/ops.py"
    json.dumps(result.messages)


def test_a_whitespace_mangled_edit_is_applied(task, sandbox, spec):
    mangled = edit("calc/ops.py", "check(a, b)\nreturn a - b\n", "check(a, b)\nreturn a + b\n")
    result = EditAgent(AgentConfig()).run(task, sandbox, ScriptedModel([mangled]), spec)
    assert result.status == "submitted" and result.messages[-1]["extra"]["edits"][0]["how"] == "whitespace"
    assert "def add(a, b):\n    check(a, b)\n    return a + b\n" in sandbox.read_file("calc/ops.py").decode()


def test_a_bad_block_is_fed_back_and_the_model_retries(task, sandbox, spec):
    model = ScriptedModel([BAD, GOOD])
    result = EditAgent(AgentConfig(malformed_limit=3)).run(task, sandbox, model, spec)
    assert (result.status, result.steps, result.malformed) == ("submitted", 2, 1)
    feedback = model.calls[1]["messages"][-1]["content"]
    assert "None of your edits could be applied" in feedback and "SEARCH text not found in calc/ops.py" in feedback
    assert "return a - b" in feedback  # the closest lines, to copy from
    assert "+    return a + b" in sandbox.diff()


def test_no_edit_applies_within_the_limit_is_a_format_error(task, sandbox, spec):
    model = ScriptedModel([BAD, "I think the code is fine.", "calc/ops.py\n<<<<<<< SEARCH\nx\n"])
    result = EditAgent(AgentConfig(malformed_limit=3)).run(task, sandbox, model, spec)
    assert (result.status, result.exit_status, result.malformed, result.steps) == ("format_error", "FormatError", 3, 3)
    kinds = [m["extra"].get("kind") for m in result.messages if m["role"] == "user"]
    assert kinds == ["instance", "format_error", "format_error", "format_error"]
    assert "no edit blocks" in result.messages[5]["content"]
    assert "could not be read" in result.messages[7]["content"] and "no =======" in result.messages[7]["content"]
    assert sandbox.diff() == ""


def test_partly_applied_edits_submit_and_report_the_rest(task, sandbox, spec):
    reply = GOOD + edit("calc/nowhere.py", "x = 1\n", "x = 2\n") + edit("../outside.py", "", "evil\n")
    result = EditAgent(AgentConfig()).run(task, sandbox, ScriptedModel([reply]), spec)
    edits = result.messages[-1]["extra"]["edits"]
    assert result.status == "submitted" and [e["applied"] for e in edits] == [True, False, False]
    assert "no such file" in edits[1]["how"] and "outside the repository" in edits[2]["how"]
    assert "not applied: no such file" in result.messages[-1]["content"]


def test_empty_search_creates_a_new_file(task, sandbox, spec):
    reply = GOOD + edit("calc/extra.py", "", "def mul(a, b):\n    return a * b\n")
    result = EditAgent(AgentConfig()).run(task, sandbox, ScriptedModel([reply]), spec)
    assert result.messages[-1]["extra"]["edits"][1] == {"path": "calc/extra.py", "applied": True, "how": "created"}
    assert "+def mul(a, b):" in sandbox.diff()


def test_step_limit_holds_for_the_edit_agent(task, sandbox, spec):
    result = EditAgent(AgentConfig(step_limit=2, malformed_limit=5)).run(task, sandbox, ScriptedModel([BAD] * 5), spec)
    assert (result.status, result.steps) == ("step_limit", 2)


class CutOffModel(ScriptedModel):
    """Every reply stopped at max_tokens."""

    def chat(self, messages, *, seed=None, **sampling):
        return super().chat(messages, seed=seed, **sampling).model_copy(update={"finish_reason": "length"})


def test_a_reply_cut_at_max_tokens_is_told_so(task, sandbox, spec):
    model = CutOffModel(["calc/ops.py\n<<<<<<< SEARCH\n    return a - b\n====", GOOD])
    result = EditAgent(AgentConfig(continuations=0)).run(task, sandbox, model, spec)
    assert result.status == "submitted" and "cut off at the length limit" in model.calls[1]["messages"][-1]["content"]
    assert result.messages[2]["extra"]["finish_reason"] == "length"


def test_repairs_default_to_one_for_the_edit_agent_and_two_for_bash():
    assert AgentConfig(type="edit").malformed_cap() == 2
    assert AgentConfig(type="bash").malformed_cap() == 3
    assert AgentConfig(type="edit", malformed_limit=5).malformed_cap() == 5
