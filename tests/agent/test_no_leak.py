"""Hidden tests and the gold patch never reach a prompt, whatever the agent (the exploit: grading data in context)."""

from __future__ import annotations

import pytest

from agentbon.agent import SUBMIT_COMMAND, make_agent
from agentbon.config import AgentConfig
from agentbon.testing import ScriptedModel

REPLIES = {
    "bash": ["```bash\nls -R\n```", "nothing", f"```bash\n{SUBMIT_COMMAND}\n```"],
    "edit": ["no edits", "calc/ops.py\n<<<<<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>>>>>> REPLACE\n"],
}


@pytest.mark.parametrize("kind", ["bash", "edit"])
@pytest.mark.parametrize("show_hints", [False, True])
def test_no_hidden_test_or_gold_patch_in_any_message(kind, show_hints, task, sandbox, spec, secrets):
    model = ScriptedModel(REPLIES[kind])
    result = make_agent(AgentConfig(type=kind, show_hints=show_hints)).run(task, sandbox, model, spec)
    assert result.status == "submitted"
    sent = [str(m) for call in model.calls for m in call["messages"]]
    recorded = [str(m) for m in result.messages]
    for text in sent + recorded:
        for secret in secrets:
            assert secret not in text
    assert any("HINT_MARKER_77ab" in text for text in sent) == show_hints
    assert any(task.problem_statement in text for text in sent)
