"""Run a fake batch in its own process (for the Ctrl-C, kill -9 and two-node tests and the benchmark).

Usage: python fake_batch.py ROOT RUN_ID N TASKS [--table JSON] [--default TEXT] [--address ADDR] [--concurrency K]
Tasks are comma-separated ids (prefix ``m:`` for a migration task). Prints plain progress lines; exit
status 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from orch_support import config, fakes, make_tasks  # noqa: E402

from agentbon.orchestrate import run_batch  # noqa: E402
from agentbon.orchestrate.cluster import sigterm_as_ctrl_c  # noqa: E402
from agentbon.progress import PlainDisplay, ProgressState  # noqa: E402


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("root", type=Path)
    p.add_argument("run_id")
    p.add_argument("n", type=int)
    p.add_argument("tasks")
    p.add_argument("--table", default="{}")
    p.add_argument("--default", default="nope")
    p.add_argument("--address")
    p.add_argument("--concurrency", type=int, default=2)
    p.add_argument("--open-delay", type=float, default=0.0)
    p.add_argument("--sigterm-as-ctrl-c", action="store_true", help="what the CLI does")
    a = p.parse_args()
    ids = a.tasks.split(",")
    tasks = make_tasks(a.root, [t for t in ids if not t.startswith("m:")])
    tasks += make_tasks(a.root, [t[2:] for t in ids if t.startswith("m:")], migration=True)
    cfg = config(a.root, n=a.n, run_id=a.run_id, concurrency=a.concurrency, ray_address=a.address)
    f = fakes(a.root, json.loads(a.table), default=a.default, open_delay_s=a.open_delay)
    if a.sigterm_as_ctrl_c:
        sigterm_as_ctrl_c()
    result = run_batch(tasks, cfg, factories=f, emit=PlainDisplay(ProgressState(a.run_id), every_s=3600))
    print(json.dumps({"planned": result.planned, "already_done": result.already_done, "interrupted": result.interrupted,
                      "wall_s": result.wall_s}), flush=True)
    return 130 if result.interrupted else 0


if __name__ == "__main__":
    sys.exit(main())
