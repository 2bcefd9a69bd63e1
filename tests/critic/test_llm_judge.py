"""The LLM judge: prompt filling, p(YES) from logprobs, a parsed answer where there are none."""

import pytest

from agentbon.critic.judge import LLMJudge, fill, p_yes, trim_trajectory
from agentbon.protocols import ChatResponse
from agentbon.testing import ScriptedModel
from agentbon.types import RepoSource, Rollout, Task, TestSet, Verdict

TASK = Task(
    task_id="t", problem_statement="add() subtracts", repo=RepoSource(url=".", base_commit="HEAD"), grade=TestSet()
)
PATCH = "diff --git a/c.py b/c.py\n--- a/c.py\n+++ b/c.py\n@@ -1 +1 @@\n-    return a - b  # {trajectory}\n+    return a + b\n"
ROLLOUT = Rollout(run_id="r", task_id="t", index=0, status="submitted", patch=PATCH)


def lp(*pairs):
    return [
        {"token": pairs[0][0], "logprob": pairs[0][1], "top_logprobs": [{"token": t, "logprob": v} for t, v in pairs]}
    ]


def test_p_yes_from_top_logprobs():
    import math

    p, source = p_yes(ChatResponse(content="YES", logprobs=lp(("YES", math.log(0.6)), ("NO", math.log(0.2)))))
    assert source == "logprobs" and p == pytest.approx(0.75)
    p, _ = p_yes(ChatResponse(content="No", logprobs=lp((" No", math.log(0.9)), ("Maybe", math.log(0.05)))))
    assert p == pytest.approx(0.1)


@pytest.mark.parametrize("content,expected", [("YES.", 1.0), ("no, it breaks mul", 0.0), ("I think so", 0.5)])
def test_parsed_answer_without_logprobs(content, expected):
    assert p_yes(ChatResponse(content=content))[0] == expected


def test_fill_is_one_pass():
    assert (
        fill("{problem}|{patch}", {"problem": "{patch}", "patch": "P", "evidence": "", "trajectory": ""}) == "{patch}|P"
    )


def test_judge_asks_with_logprobs_and_records_the_source():
    model = ScriptedModel(["YES"])
    trajectory = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "I changed a - b to a + b"},
    ]
    judge = LLMJudge(model, trajectories=lambda rid: trajectory)
    evidence = Verdict(
        run_id="r", task_id="t", rollout_id="t/0", role="evidence", status="pass", reason="all 1 tests passed"
    )
    assert judge.score(TASK, ROLLOUT, evidence) == 1.0 and judge.sources == {"parsed": 1}
    call = model.calls[0]
    assert call["logprobs"] is True and call["top_logprobs"] == 5 and call["temperature"] == 0.0
    prompt = call["messages"][0]["content"]
    assert "add() subtracts" in prompt and "+    return a + b" in prompt and "I changed a - b" in prompt
    assert "# {trajectory}" in prompt and "all 1 tests passed" in prompt
    assert judge.score(TASK, ROLLOUT.model_copy(update={"patch": ""}), None) == 0.0 and len(model.calls) == 1


def test_trajectory_is_trimmed_from_the_end():
    msgs = [{"role": "user", "content": f"m{i} " + "x" * 1000} for i in range(30)]
    text = trim_trajectory(msgs, budget=2000)
    assert len(text) <= 2100 and "m29" in text and "m3 " not in text


def test_the_tokens_the_judge_spends_reach_the_critic_selectors_ranking():
    from agentbon.config import SelectConfig
    from agentbon.protocols import Candidate
    from agentbon.select import make_selector

    model = ScriptedModel(["YES", "NO"])
    second = ROLLOUT.model_copy(update={"index": 1, "patch": PATCH.replace("a + b", "b + a")})
    empty = ROLLOUT.model_copy(update={"index": 2, "patch": ""})
    selector = make_selector("critic", SelectConfig(critic="judge"), model=model)
    selection = selector.select(TASK, [Candidate(rollout=r) for r in (ROLLOUT, second, empty)])
    spent = [call["messages"][0]["content"] for call in model.calls]
    words = {r.rollout_id: r.tokens for r in selection.ranked}
    # ScriptedModel counts words: the prompt's, then the one-word reply; an empty patch is never asked about.
    assert words == {"t/0": len(spent[0].split()) + 1, "t/1": len(spent[1].split()) + 1, "t/2": None}
    assert selection.winner == "t/0"
