"""Measure how hard demo tasks are for a real model: N rollouts of the edit agent each, graded by the hidden tests.

    python tasks/authoring/calibrate.py -n 8 demo-a-bookmarks demo-a-envfile   # default: every demo-a-* task

Uses agentbon's own parts without Ray: the local model server (llama.cpp, the embedded default model),
the edit agent, the sandbox backend (Docker by default) and the test verifier. Prints, per task, how many of
the N candidates the grade resolves, and pass@1 / pass@N; figures only, nothing is asserted. Each finished
rollout is saved (``--save``), so an interrupted calibration picks up where it stopped.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from math import comb
from pathlib import Path

from agentbon.agent.edit import EditAgent
from agentbon.config import AgentConfig, ModelConfig, SandboxConfig
from agentbon.models import make_model
from agentbon.sandbox import make_backend
from agentbon.tasks import load_suite, raise_on_errors
from agentbon.types import Rollout, RolloutSpec
from agentbon.verify.runner import TestVerifier

SUITE = Path(__file__).resolve().parents[1] / "demo"


def pass_at(n: int, c: int, k: int) -> float:
    return 1.0 - (comb(n - c, k) / comb(n, k) if n - c >= k else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task ids (default: every demo-a-* task)")
    parser.add_argument("-n", type=int, default=8, help="rollouts per task")
    parser.add_argument("--threads", type=int, default=1, help="llama.cpp threads")
    parser.add_argument("--backend", default="docker", choices=["docker", "process"], help="sandbox backend")
    parser.add_argument(
        "--tries", type=int, default=AgentConfig(type="edit").malformed_cap(), help="replies per rollout while no edit applies"
    )
    parser.add_argument(
        "--save",
        type=Path,
        default=Path(tempfile.gettempdir()) / "agentbon-calibrate",
        help="where each rollout's patch, messages and result go (a rerun resumes from them)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per rollout")
    parser.add_argument("--endpoint", help="an OpenAI-compatible endpoint instead of a local server")
    args = parser.parse_args()

    tasks, errors = load_suite(SUITE)
    raise_on_errors(errors)
    wanted = set(args.tasks)
    tasks = [t for t in tasks if (t.task_id in wanted if wanted else t.task_id.startswith("demo-a-"))]
    model_config = ModelConfig(threads=args.threads, endpoint=args.endpoint)
    agent = EditAgent(AgentConfig(type="edit", malformed_limit=args.tries), model_config)
    backend = make_backend(SandboxConfig(backend=args.backend))
    verifier = TestVerifier(backend)
    started = time.monotonic()
    with make_model(model_config, log=print) as model:
        for task in tasks:
            records, task_started = [], time.monotonic()
            for i in range(args.n):
                done = args.save / task.task_id / f"{i}.result.json"
                if done.is_file():  # resume: an interrupted calibration keeps the rollouts it finished
                    records.append(json.loads(done.read_text()))
                    continue
                spec = RolloutSpec(run_id="calibrate", task_id=task.task_id, index=i, seed=1000 + i, model="local")
                with backend.open(task) as sandbox:
                    result = agent.run(task, sandbox, model, spec)
                    patch = sandbox.diff()
                rollout = Rollout(run_id="calibrate", task_id=task.task_id, index=i, status=result.status, patch=patch)
                verdict = None
                for _ in range(3 if patch.strip() else 0):  # an infra error says nothing about the patch: retry
                    verdict = verifier.verify(task, rollout, "grade")
                    if verdict.status != "infra_error":
                        break
                record = {
                    "status": result.status,
                    "resolved": bool(verdict and verdict.resolved),
                    "prompt_tokens": result.usage.prompt_tokens,
                    "completion_tokens": result.usage.completion_tokens,
                    "model_s": round(result.model_s, 1),
                    "grade": f"{verdict.status}: {verdict.reason}" if verdict else "-",
                }
                done.parent.mkdir(parents=True, exist_ok=True)
                (done.parent / f"{i}.diff").write_text(patch)
                (done.parent / f"{i}.messages.json").write_text(json.dumps(result.messages, indent=1))
                done.write_text(json.dumps(record))
                records.append(record)
                if args.verbose:
                    print(f"  {i}: {record}", flush=True)
            n, resolved = len(records), sum(r["resolved"] for r in records)
            marks = "".join("R" if r["resolved"] else r["status"][:1] for r in records)
            print(
                f"{task.task_id:<22} {task.difficulty or '?':<7} resolved {resolved}/{n}  "
                f"pass@1 {pass_at(n, resolved, 1):.2f}  pass@{n} {pass_at(n, resolved, n):.2f}  [{marks}]  "
                f"{sum(r['completion_tokens'] for r in records) / n:.0f} completion tok/rollout  "
                f"model {sum(r['model_s'] for r in records):.0f}s  {time.monotonic() - task_started:.0f}s",
                flush=True,
            )
    print(f"total {time.monotonic() - started:.0f}s")


if __name__ == "__main__":
    main()
