"""Both agents against a real Docker sandbox (marker ``docker``): the loop, a hanging command, edits, the patch."""

from __future__ import annotations

import time

import pytest

from agentbon.agent import SUBMIT_COMMAND, make_agent
from agentbon.config import AgentConfig
from agentbon.testing import ScriptedModel

pytestmark = pytest.mark.docker


def bash(command: str) -> str:
    return f"THOUGHT: next.\n\n```bash\n{command}\n```\n"


def test_bash_agent_in_docker(docker_box, task, spec, secrets):
    model = ScriptedModel(
        [
            bash("ls calc && cat calc/ops.py"),
            "I will fix it now.",  # malformed: fed back
            bash("echo waiting; sleep 30"),  # hangs: a timeout observation, the loop goes on
            bash(
                "sed -i 's/return a - b/return a + b/' calc/ops.py && python3 -c 'import calc; print(calc.add(2, 3))'"
            ),
            bash(SUBMIT_COMMAND),
        ]
    )
    t0 = time.monotonic()
    result = make_agent(AgentConfig(type="bash", command_timeout_s=2)).run(task, docker_box, model, spec)
    assert time.monotonic() - t0 < 60
    assert (result.status, result.exit_status, result.steps, result.malformed) == ("submitted", "Submitted", 5, 1)
    observations = [m for m in result.messages if m["extra"].get("kind") in ("observation", "submit")]
    assert "def add(a, b):" in observations[0]["content"] and observations[0]["extra"]["exit_code"] == 0
    assert observations[1]["extra"]["timed_out"] is True and "timed out after 2 seconds" in observations[1]["content"]
    assert "<output>\n5\n</output>" in observations[2]["content"]
    patch = docker_box.diff()
    assert "+    return a + b" in patch and "calc/ops.py" in patch
    for text in [str(m) for c in model.calls for m in c["messages"]]:
        assert not any(s in text for s in secrets)


def test_edit_agent_in_docker(docker_box, task, spec, secrets):
    bad = "calc/ops.py\n<<<<<<< SEARCH\n    return a times b\n=======\n    return a + b\n>>>>>>> REPLACE\n"
    good = (
        "calc/ops.py\n<<<<<<< SEARCH\ncheck(a, b)\nreturn a - b\n=======\ncheck(a, b)\nreturn a + b\n>>>>>>> REPLACE\n"
    )
    model = ScriptedModel([bad, good])
    result = make_agent(AgentConfig(type="edit")).run(task, docker_box, model, spec)
    assert (result.status, result.steps, result.malformed) == ("submitted", 2, 1)
    assert result.messages[-1]["extra"]["edits"] == [{"path": "calc/ops.py", "applied": True, "how": "whitespace"}]
    prompt = result.messages[1]["content"]
    assert '<file path="calc/ops.py"' in prompt and '<file path="tests/test_ops.py"' not in prompt
    check = docker_box.exec("python3 -c 'import calc; print(calc.add(2, 3))'")
    assert check.output.strip() == "5"
    assert docker_box.diff().count("+    return a + b") == 1
    assert docker_box.exec("ls /tmp/.agentbon-localise-* 2>/dev/null | wc -l").output.strip() == "0"
    for text in [str(m) for c in model.calls for m in c["messages"]]:
        assert not any(s in text for s in secrets)
