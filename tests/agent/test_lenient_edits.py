"""Replies of a small model that the strict format refused (shortened from real trajectories) now apply."""

from __future__ import annotations

import pytest

from agentbon.agent import EditAgent
from agentbon.agent.apply import apply_edits, apply_snippets
from agentbon.agent.blocks import parse_reply
from agentbon.agent.definitions import replace_definitions, snippets
from agentbon.agent.paths import resolve_path
from agentbon.config import AgentConfig
from agentbon.testing import ScriptedModel

FILES = {"calc/ops.py", "calc/util.py", "calc/__init__.py", "docs/notes.md", "README.md", "tests/test_ops.py"}
SHOWN = ["calc/ops.py", "calc/util.py"]
NEW_ADD = "def add(a, b):\n    check(a, b)\n    return a + b\n"


@pytest.mark.parametrize(
    ("line", "path"),
    [
        ("calc/ops.py", "calc/ops.py"),
        ("path/to/calc/ops.py", "calc/ops.py"),  # copied from the format example
        ("path/calc/ops.py", "calc/ops.py"),
        ("a/calc/ops.py", "calc/ops.py"),
        ("/testbed/calc/ops.py", "calc/ops.py"),
        ("Here's the fix for the `calc/ops.py` file:", "calc/ops.py"),
        ("**calc/ops.py**", "calc/ops.py"),
        ("#### ops.py", "calc/ops.py"),  # unique name
        ("path/to/README.md", "README.md"),
        ("Here's the fix:", None),
        ("path/to/file.py", None),
        ("other/ops2.py", None),
    ],
)
def test_resolve_path(line, path):
    assert resolve_path(line, FILES) == path


def test_an_ambiguous_name_is_not_guessed():
    assert resolve_path("util.py", {"a/util.py", "b/util.py"}) is None
    assert resolve_path("a/util.py", {"a/util.py", "b/util.py"}) == "a/util.py"


def test_placeholder_path_and_prose_path_apply(sandbox, repo):
    reply = (
        "Here's the fix:\n\npath/to/calc/ops.py\n<<<<<<< SEARCH\n    check(a, b)\n    return a - b\n=======\n"
        "    check(a, b)\n    return a + b\n>>>>>>> REPLACE\n"
    )
    outcomes = apply_edits(sandbox, parse_reply(reply).blocks, FILES, SHOWN)
    assert [(o.path, o.applied, o.how) for o in outcomes] == [("calc/ops.py", True, "exact")]


def test_a_block_without_path_goes_to_the_one_shown_file_it_fits(sandbox):
    reply = "```python\n<<<<<<< SEARCH\n    check(a, b)\n    return a - b\n=======\n    check(a, b)\n    return a + b\n>>>>>>> REPLACE\n```\n"
    outcomes = apply_edits(sandbox, parse_reply(reply).blocks, FILES, SHOWN)
    assert [(o.path, o.applied) for o in outcomes] == [("calc/ops.py", True)]


def test_an_unknown_path_lists_candidates(sandbox):
    reply = "calc/opps.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"
    (outcome,) = apply_edits(sandbox, parse_reply(reply).blocks, FILES, SHOWN)
    assert not outcome.applied and "no such file" in outcome.how and "did you mean calc/ops.py" in outcome.how


def test_fences_inside_the_parts_are_dropped(sandbox):
    reply = (
        "#### calc/ops.py\n<<<<<<< SEARCH\n```python\ndef add(a, b):\n    check(a, b)\n    return a - b\n```\n=======\n\n"
        f"```python\n{NEW_ADD}```\n>>>>>>> REPLACE\n"
    )
    (outcome,) = apply_edits(sandbox, parse_reply(reply).blocks, FILES, SHOWN)
    assert outcome.applied and NEW_ADD in sandbox.read_file("calc/ops.py").decode()


def test_a_hallucinated_search_with_a_whole_function_replaces_the_definition(sandbox):
    # The SEARCH part has a line that is not in the file; both parts are the whole function.
    reply = (
        "calc/ops.py\n<<<<<<< SEARCH\ndef add(a, b):\n    check(a, b)\n    total = a - b\n    return total\n=======\n"
        f"{NEW_ADD}>>>>>>> REPLACE\n"
    )
    (outcome,) = apply_edits(sandbox, parse_reply(reply).blocks, FILES, SHOWN)
    assert (outcome.applied, outcome.how) == (True, "definitions: add")
    text = sandbox.read_file("calc/ops.py").decode()
    assert NEW_ADD in text and "def sub(a, b):\n    return a - b\n" in text


def test_a_cut_reply_keeps_its_complete_blocks():
    reply = (
        "calc/ops.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n\n"
        "calc/util.py\n<<<<<<< SEARCH\ndef check(*args):\n=======\ndef check(*ar"
    )
    parsed = parse_reply(reply)
    assert [b.path for b in parsed.blocks] == ["calc/ops.py"] and parsed.cut
    assert parsed.problems == ["edit block 2 (calc/util.py): no >>>>>>> REPLACE line (the reply ended inside it)"]


def test_a_broken_block_does_not_swallow_the_next():
    reply = "a.py\n<<<<<<< SEARCH\nx = 1\n\nb.py\n<<<<<<< SEARCH\ny = 1\n=======\ny = 2\n>>>>>>> REPLACE\n"
    parsed = parse_reply(reply)
    assert [b.path for b in parsed.blocks] == ["b.py"] and parsed.problems == ["edit block 1 (a.py): no ======= line"]


def test_a_python_block_with_a_whole_function_under_a_comment_path(sandbox):
    reply = f"The fix:\n\n```python\n# calc/ops.py\n{NEW_ADD}```\n\nThis fixes it."
    (outcome,) = apply_snippets(sandbox, snippets(reply), FILES, SHOWN)
    assert (outcome.path, outcome.applied, outcome.how) == ("calc/ops.py", True, "definitions: add")
    assert "def sub(a, b):" in sandbox.read_file("calc/ops.py").decode()


def test_a_python_block_without_a_path_goes_to_the_file_defining_the_name(sandbox):
    (outcome,) = apply_snippets(sandbox, snippets(f"```python\n{NEW_ADD}```\n"), FILES, SHOWN)
    assert (outcome.path, outcome.applied) == ("calc/ops.py", True)


def test_a_file_echo_with_the_whole_new_file_replaces_what_changed(sandbox):
    # The model repeats the prompt's <file> tag with the complete new file.
    text = sandbox.read_file("calc/ops.py").decode().replace("return a - b\n\n\ndef sub", "return a + b\n\n\ndef sub")
    reply = f'Here is the fix:\n\n<file path="calc/ops.py" lines="1-10 of 10">\n{text}</file>\n'
    (outcome,) = apply_snippets(sandbox, snippets(reply), FILES, SHOWN)
    assert (outcome.applied, outcome.how) == (True, "definitions: add")


def test_an_unchanged_echo_is_not_an_edit(sandbox):
    text = sandbox.read_file("calc/ops.py").decode()
    (outcome,) = apply_snippets(sandbox, snippets(f"```python\n{text}```\n"), FILES, SHOWN)
    assert not outcome.applied and "same as the file" in outcome.how


def test_a_block_missing_its_separator_is_read_as_new_code(sandbox):
    # Real reply shape: "```python / # path / <<<<<<< SEARCH / new code / >>>>>>> REPLACE / ```".
    reply = f"```python\n# calc/ops.py\n<<<<<<< SEARCH\n{NEW_ADD}>>>>>>> REPLACE\n```\n"
    assert parse_reply(reply).blocks == []
    (outcome,) = apply_snippets(sandbox, snippets(reply), FILES, SHOWN)
    assert outcome.applied and NEW_ADD in sandbox.read_file("calc/ops.py").decode()


def test_a_cut_code_block_keeps_its_complete_definitions():
    text = "def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"
    code = "def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return (a -"
    new, changed = replace_definitions(text, code)
    assert new.startswith("def add(a, b):\n    return a + b\n") and "def sub(a, b):\n    return a - b" in new
    assert changed == ["add", "(incomplete def sub left out)"]


def test_methods_in_a_class_wrapper_replace_only_those_methods_and_keep_indentation():
    text = "class Box:\n    def a(self):\n        return 1\n\n    @property\n    def b(self):\n        return 2\n"
    new, changed = replace_definitions(text, "class Box:\n  @property\n  def b(self):\n    return 3\n")
    assert new == "class Box:\n    def a(self):\n        return 1\n\n    @property\n    def b(self):\n      return 3\n"
    assert changed == ["Box.b"]


def test_a_bare_method_goes_into_its_class():
    text = "class Box:\n    def a(self):\n        return 1\n"
    new, _ = replace_definitions(text, "def a(self):\n    return 5\n")
    assert new == "class Box:\n    def a(self):\n        return 5\n"


def test_new_imports_are_added_and_new_functions_appended_only_when_asked():
    text = "import os\n\n\ndef f():\n    return os.sep\n"
    code = "import re\n\n\ndef f():\n    return re.escape(os.sep)\n\n\ndef g():\n    return 1\n"
    new, changed = replace_definitions(text, code)
    assert new.startswith("import os\nimport re\n") and "def g" not in new and changed == ["f", "imports"]
    new, changed = replace_definitions(text, code, append_new=True)
    assert new.rstrip().endswith("def g():\n    return 1") and "g" in changed


def test_an_edit_that_breaks_the_syntax_is_refused():
    text = "class Box:\n    def a(self):\n        return 1\n"
    with pytest.raises(ValueError, match="no definition of zzz"):
        replace_definitions(text, "def zzz():\n    return 1\n")
    with pytest.raises(ValueError, match="does not parse"):
        replace_definitions("def a(:\n", "def a():\n    return 1\n")


def test_the_agent_applies_a_whole_function_reply_and_the_prompt_names_a_real_path(task, sandbox, spec):
    model = ScriptedModel([f"The add function subtracts.\n\n**calc/ops.py**\n```python\n{NEW_ADD}```\n"])
    result = EditAgent(AgentConfig()).run(task, sandbox, model, spec)
    assert result.status == "submitted" and "+    return a + b" in sandbox.diff()
    prompt = result.messages[1]["content"]
    assert "path/to/" not in prompt and "such as calc/ops.py" in prompt and "```python" in prompt
    # The format is shown by a concrete example, with no prose between the markers for a small model to copy.
    search = prompt.split("<<<<<<< SEARCH\n", 1)[1].split("=======", 1)[0]
    assert search == "    total = sum(prices)\n    return total - 1\n"
