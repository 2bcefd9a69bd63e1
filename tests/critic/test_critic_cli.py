"""`agentbon critic train` and `agentbon critic eval` (the judge against a real local HTTP endpoint)."""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from typer.testing import CliRunner

from agentbon.cli import app
from agentbon.critic import LogisticModel


class JudgeHandler(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint that says YES to short patches, with top logprobs."""

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        short = prompt.count("+line ") <= 3
        p = 0.8 if short else 0.3
        step = {
            "token": "YES",
            "logprob": math.log(p),
            "top_logprobs": [{"token": "YES", "logprob": math.log(p)}, {"token": "NO", "logprob": math.log(1 - p)}],
        }
        reply = {
            "id": "x",
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "YES" if short else "NO"},
                    "finish_reason": "stop",
                    "logprobs": {"content": [step]} if body.get("logprobs") else None,
                }
            ],
            "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def judge_endpoint():
    server = ThreadingHTTPServer(("127.0.0.1", 0), JudgeHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def test_train_saves_a_model_and_prints_held_out_figures(run_dir, tmp_path):
    out = tmp_path / "critics/"
    result = CliRunner().invoke(
        app, ["critic", "train", str(run_dir), "-o", str(out), "--no-text", "--folds", "4"], env={"COLUMNS": "160"}
    )
    assert result.exit_code == 0, result.output
    assert "4-fold, grouped by task" in result.output and "classifier (held-out)" in result.output
    model = LogisticModel.load(out)
    assert model.report["held_out"]["n"] == 48 and not model.text


def test_train_on_a_non_run_dir_fails_clearly(tmp_path):
    result = CliRunner().invoke(app, ["critic", "train", str(tmp_path), "--no-text"], env={"COLUMNS": "300"})
    assert result.exit_code == 1 and "not a run directory" in result.output


def test_eval_compares_classifier_judge_and_baselines(run_dir, tmp_path, judge_endpoint):
    out = tmp_path / "eval.json"
    result = CliRunner().invoke(
        app,
        [
            "critic",
            "eval",
            str(run_dir),
            "--no-text",
            "--judge",
            "--endpoint",
            judge_endpoint,
            "--model",
            "fake",
            "--limit",
            "20",
            "--json",
            str(out),
        ],
        env={"COLUMNS": "160"},
    )
    assert result.exit_code == 0, result.output
    metrics = json.loads(out.read_text())["metrics"]
    assert set(metrics) == {"classifier (held-out tasks)", "heuristic-prior", "evidence pass", "judge (fake)"}
    assert all(m["n"] == 20 for m in metrics.values())
    assert metrics["judge (fake)"]["auroc"] > 0.6  # short patches are the good ones in the synthetic runs
    assert "judge scores from: {'logprobs': 20}" in result.output
