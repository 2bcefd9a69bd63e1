"""SEARCH/REPLACE blocks: parsing what models write, applying exactly and whitespace-tolerantly."""

from __future__ import annotations

import pytest

from agentbon.agent.blocks import BlockSyntaxError, EditBlock, apply_block, clean_path, parse_blocks

SRC = "def add(a, b):\n    check(a, b)\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n"


def block(path: str, search: str, replace: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def test_parse_several_blocks_with_fences_and_decorated_paths():
    reply = (
        "The bug is in add.\n\n```python\n### calc/ops.py\n<<<<<<< SEARCH\n    return a - b\n=======\n"
        "    return a + b\n>>>>>>> REPLACE\n```\n\n`/repo/calc/util.py`\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n"
        ">>>>>>> REPLACE\n<<<<<<< SEARCH\ny = 1\n=======\n>>>>>>> REPLACE\n"
    )
    blocks = parse_blocks(reply, "/repo")
    assert blocks == [
        EditBlock("calc/ops.py", "    return a - b\n", "    return a + b\n"),
        EditBlock("calc/util.py", "x = 1\n", "x = 2\n"),
        EditBlock("calc/util.py", "y = 1\n", ""),  # right after another block: the same file
    ]


@pytest.mark.parametrize(
    "reply,problem",
    [
        ("<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n", "no file path"),
        ("f.py\n<<<<<<< SEARCH\na\n>>>>>>> REPLACE\n", "no ======="),
        ("f.py\n<<<<<<< SEARCH\na\n=======\nb\n", "no >>>>>>> REPLACE"),
    ],
)
def test_malformed_blocks_name_the_problem(reply, problem):
    with pytest.raises(BlockSyntaxError, match=problem):
        parse_blocks(reply)


def test_clean_path():
    assert clean_path("**File: `./calc/ops.py`**") == "calc/ops.py"
    assert clean_path("/repo/x.py:", "/repo") == "x.py"


def test_exact_match_replaces_the_first_occurrence_only():
    text, how = apply_block(SRC, EditBlock("f", "    return a - b\n", "    return a + b\n"))
    assert how == "exact" and text.count("return a + b") == 1 and text.endswith("    return a - b\n")


def test_whitespace_tolerant_match_reindents_the_replacement():
    # 2-space indentation against the file's 4: the replacement follows the file.
    search = "def add(a, b):\n  check(a, b)\n  return a - b   \n"
    replace = "def add(a, b):\n  check(a, b)\n  if a:\n    pass\n  return a + b\n"
    text, how = apply_block(SRC, EditBlock("f", search, replace))
    assert how == "whitespace"
    assert text.startswith("def add(a, b):\n    check(a, b)\n    if a:\n        pass\n    return a + b\n\n")
    # A block written one level too shallow: shifted to the file's depth.
    text, how = apply_block(SRC, EditBlock("f", "check(a, b)\nreturn a - b\n", "if a:\n    return a + b\nreturn 0\n"))
    assert how == "whitespace"
    assert "def add(a, b):\n    if a:\n        return a + b\n    return 0\n" in text


def test_trailing_whitespace_only_difference():
    text, how = apply_block(SRC, EditBlock("f", "    check(a, b)  \n    return a - b\n", "    return a + b\n"))
    assert how == "whitespace" and "def add(a, b):\n    return a + b\n\n" in text


def test_no_match_says_so_with_the_closest_lines():
    with pytest.raises(ValueError, match="SEARCH text not found in f") as info:
        apply_block(SRC, EditBlock("f", "    check(a, c)\n    return a * b\n", "x\n"))
    assert "closest lines" in str(info.value) and "check(a, b)" in str(info.value)


def test_search_without_final_newline_at_end_of_file():
    text, how = apply_block("x = 1\ny = 2", EditBlock("f", "y = 2\n", "y = 3\n"))
    assert (text, how) == ("x = 1\ny = 3", "exact")
