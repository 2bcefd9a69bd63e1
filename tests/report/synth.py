"""Synthetic run stores for report and export tests: Rollout, Verdict and Selection records written with RunStore.

A run is described by a grid of one-letter codes per task and rollout index:
``P`` graded pass, ``F`` graded fail, ``U`` valid but no grade verdict, ``I`` infra error,
``C`` cancelled, ``E`` graded fail with an empty patch, ``.`` no rollout at all.
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

import git

from agentbon.store import RunStore
from agentbon.types import Flag, Ranked, RepoSource, Rollout, Selection, Task, TestSet, Timings, Usage, Verdict


def make_repo(path: Path, task_ids: list[str]) -> tuple[str, Path]:
    """A git repository with one module per task (``<task>.py`` holding ``VALUE = 0``); returns (base sha, path)."""
    repo = git.Repo.init(path)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "synth").set_value("user", "email", "synth@example.invalid")
    for t in task_ids:
        (path / f"{t}.py").write_text("VALUE = 0\n")
    repo.index.add([f"{t}.py" for t in task_ids])
    sha = repo.index.commit("base").hexsha
    return sha, path


def patch_for(task_id: str, index: int) -> str:
    """A unified diff that applies to the base commit of :func:`make_repo`."""
    return (
        f"diff --git a/{task_id}.py b/{task_id}.py\n--- a/{task_id}.py\n+++ b/{task_id}.py\n"
        f"@@ -1 +1 @@\n-VALUE = 0\n+VALUE = {index + 1}\n"
    )


def make_run(
    root: Path,
    grid: dict[str, str],
    scores: dict[str, dict[str, list[float]]] | None = None,
    run_id: str = "run-synth",
    repo: tuple[str, Path] | None = None,
    oracle: bool = True,
    selectors_order: list[str] | None = None,
) -> RunStore:
    """Write a run: ``grid`` maps task id → codes per index; ``scores`` maps selector → task → score per index.

    The winner of each selection is the best-scored valid candidate (first on ties). With
    ``oracle`` an oracle selection ranks by the grade. Usage and timings vary with the index so
    cost percentiles are non-trivial. The store's per-record fsync is skipped (durability is not
    what these tests are about, and it costs seconds per store).
    """
    with mock.patch("agentbon.store.os.fsync"):
        return _make_run(root, grid, scores, run_id, repo, oracle, selectors_order)


def _make_run(root, grid, scores, run_id, repo, oracle, selectors_order) -> RunStore:
    n = max(len(codes) for codes in grid.values())
    store = RunStore(root / run_id)
    base, repo_path = repo if repo else ("0" * 40, root / "no-repo")
    tasks = [
        Task(task_id=t, problem_statement=f"Fix {t}.", repo=RepoSource(url=str(repo_path), base_commit=base),
             grade=TestSet(fail_to_pass=[f"test_{t}.py::test_value"]))
        for t in grid
    ]  # fmt: skip
    select = {"selectors": selectors_order or ["tests", "critic"], "critic": "classifier"}  # no trained one: the prior
    config = {"n": n, "model": {"name": "synth-model"}, "select": select}
    config["report"] = {"bootstrap": 200}
    store.create(config, tasks)
    for t, codes in grid.items():
        for i, code in enumerate(codes):
            if code == ".":
                continue
            status = {"I": "infra_error", "C": "cancelled"}.get(code, "submitted")
            patch = "" if code in "EI" else patch_for(t, i)
            rollout = Rollout(
                run_id=run_id, task_id=t, index=i, status=status, patch=patch, steps=3,
                usage=Usage(prompt_tokens=1000 + i, completion_tokens=100 + i, cached_tokens=500, calls=3),
                timings=Timings(started_at=0.0, wall_s=10.0 + i, sandbox_s=12.0 + i),
            )  # fmt: skip
            messages = [
                {"role": "system", "content": "You fix bugs."},
                {"role": "user", "content": f"Fix {t}."},
                {"role": "assistant", "content": f"edit {i}", "extra": {"tokens": 5}},
            ]
            store.save_rollout(rollout, messages)
            rid = rollout.rollout_id
            if code in "PFE":
                grade = "pass" if code == "P" else "fail"
                tests = {f"test_{t}.py::test_value": "passed" if code == "P" else "failed"}
                store.save_verdict(Verdict(run_id=run_id, task_id=t, rollout_id=rid, role="grade", status=grade,
                                           tests=tests, duration_s=2.0))  # fmt: skip
                store.save_verdict(Verdict(run_id=run_id, task_id=t, rollout_id=rid, role="evidence", status=grade,
                                           tests=tests, duration_s=1.5, reason=f"evidence {grade}"))  # fmt: skip
    for name, per_task in (scores or {}).items():
        for t, values in per_task.items():
            _select(store, run_id, t, name, values, grid[t], oracle=False)
    if oracle:
        for t, codes in grid.items():
            _select(store, run_id, t, "oracle", [1.0 if c == "P" else 0.0 for c in codes], codes, oracle=True)
    return store


def _select(store: RunStore, run_id: str, task_id: str, name: str, values: list[float], codes: str, oracle: bool):
    ranked = [
        Ranked(rollout_id=f"{task_id}/{i}", score=v) for i, (v, c) in enumerate(zip(values, codes, strict=False))
        if c not in ".IC"
    ]  # fmt: skip
    winner = max(ranked, key=lambda r: r.score).rollout_id if ranked else None
    store.save_selection(Selection(run_id=run_id, task_id=task_id, selector=name, winner=winner, ranked=ranked,
                                   oracle=oracle, reason="synthetic"))  # fmt: skip


def flag(
    store: RunStore,
    rollout_id: str,
    kinds: tuple[str, ...] = (),
    roles: tuple[str, ...] = ("evidence", "grade"),
    tampered: tuple[str, ...] = (),
) -> None:
    """Record a rollout's verdicts again with flags of ``kinds`` (and ``tampered`` paths): the latest verdict wins."""
    with mock.patch("agentbon.store.os.fsync"):
        for role in roles:
            verdict = store.verdicts(role)[rollout_id]
            flags = [Flag(kind=k, detail=f"{k} in {rollout_id}", paths=list(tampered) if k == "tampered" else [])
                     for k in kinds]  # fmt: skip
            store.save_verdict(verdict.model_copy(update={"flags": flags, "tampered": list(tampered)}))


def set_config(store: RunStore, **sections: dict) -> None:
    """Merge ``sections`` into the run's stored config (``select={"allow_flags": [...]}``)."""
    import yaml

    path = store.path / "config.yaml"
    config = yaml.safe_load(path.read_text())
    for name, values in sections.items():
        config[name] = {**(config.get(name) or {}), **values}
    path.write_text(yaml.safe_dump(config))


def flip_evidence(store: RunStore, rollout_ids: list[str]) -> None:
    """Make the evidence disagree with the grade on these rollouts (the latest verdict wins)."""
    with mock.patch("agentbon.store.os.fsync"):
        for rid in rollout_ids:
            v = store.verdicts("evidence")[rid]
            store.save_verdict(v.model_copy(update={"status": "fail" if v.status == "pass" else "pass"}))


def set_parses(store: RunStore, parses: dict[str, bool]) -> None:
    """Record the parse stage's finding on these rollouts' evidence verdicts (the latest verdict wins)."""
    with mock.patch("agentbon.store.os.fsync"):
        for rid, ok in parses.items():
            v = store.verdicts("evidence")[rid]
            store.save_verdict(v.model_copy(update={"parses": ok, "parse_errors": [] if ok else [f"{rid}.py:1: x"]}))


def set_test_times(
    store: RunStore, f2p_s: float, p2p_s: float, p2p_only_fails: list[str], live: bool = False
) -> None:
    """Give every task an evidence set of one FAIL_TO_PASS and one PASS_TO_PASS test, and every evidence verdict
    their outcomes and times (the runner's JUnit ``time``): a failing candidate fails its FAIL_TO_PASS test, except
    those in ``p2p_only_fails``, which fail only the other (the latest task definition and verdict win). ``live``:
    the run verified FAIL_TO_PASS first itself, so a candidate that failed that test stopped there, its PASS_TO_PASS
    test not run and its seconds less that test's."""
    config = store.config_data()
    tasks = []
    for t in store.tasks():
        f2p, p2p = f"test_{t.task_id}.py::test_value", f"test_{t.task_id}.py::test_other"
        tasks.append(t.model_copy(update={"evidence": TestSet(fail_to_pass=[f2p], pass_to_pass=[p2p])}))
    store.create(config, tasks, replace={t.task_id for t in tasks})
    with mock.patch("agentbon.store.os.fsync"):
        for rid, v in store.verdicts("evidence").items():
            f2p, p2p = f"test_{v.task_id}.py::test_value", f"test_{v.task_id}.py::test_other"
            passed = v.status == "pass"
            outcomes = {f2p: "passed" if passed or rid in p2p_only_fails else "failed",
                        p2p: "passed" if passed else "failed"}  # fmt: skip
            update = {"tests": outcomes, "test_s": {f2p: f2p_s, p2p: p2p_s}}
            if live and outcomes[f2p] == "failed":
                update = {"tests": {f2p: "failed"}, "test_s": {f2p: f2p_s}, "not_run": [p2p],
                          "duration_s": v.duration_s - p2p_s}  # fmt: skip
            store.save_verdict(v.model_copy(update=update))
