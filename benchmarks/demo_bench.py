"""A real best-of-N batch per model launcher, and the same model calls replayed against the server alone.

For each ``--launcher`` it runs ``agentbon run SUITE -n N -c model.launcher=L`` in a fresh run directory (a child
process, plain log lines) while sampling memory once a second: the resident set of the agentbon process tree (driver,
Ray workers, the model server) plus the memory of agentbon's containers (their cgroups). It then prints: wall time,
the server's start time, completion tokens and aggregate tokens/s over the generation span (first model request to
last reply), peak memory, coverage (pass@1, pass@N) and resolved tasks.

``--replay`` then sends the recorded model calls of that run (same messages, seeds, sampling, as many at once as the
run had sandbox slots) straight to a fresh server of the same launcher, with no sandboxes, no Ray and no agent, and
prints its tokens/s and the ratio agentbon / server alone (issue target: at least 0.9).

Usage: python benchmarks/demo_bench.py [--launcher llama-cpp] [--launcher vllm] [--n 8] [--suite tasks/demo]
       [--out runs/bench] [--replay] [-c key.sub=value ...]
       python benchmarks/demo_bench.py --replay-only RUN_DIR --launcher L
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentbon.files import read_jsonl

ROOT = Path(__file__).resolve().parents[1]


def _tree_rss(root_pid: int) -> int:
    """Resident bytes of ``root_pid`` and all its descendants."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        try:
            with open(stat) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(stat.split("/")[2])
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [root_pid]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, []))
    return total


def _container_memory() -> int:
    """Bytes charged to running containers' cgroups (cgroup v2 or v1 layouts)."""
    total = 0
    for pattern in (
        "/sys/fs/cgroup/system.slice/docker-*.scope/memory.current",
        "/sys/fs/cgroup/docker/*/memory.current",
        "/sys/fs/cgroup/memory/docker/*/memory.usage_in_bytes",
    ):
        for path in glob.glob(pattern):
            try:
                total += int(Path(path).read_text())
            except (OSError, ValueError):
                pass
    return total


def _container_cpu() -> dict[str, float]:
    """CPU seconds so far of each running container (cgroup v2 ``cpu.stat`` or v1 ``cpuacct.usage``)."""
    out: dict[str, float] = {}
    for path in glob.glob("/sys/fs/cgroup/system.slice/docker-*.scope/cpu.stat") + glob.glob(
        "/sys/fs/cgroup/docker/*/cpu.stat"
    ):
        try:
            out[path] = int(Path(path).read_text().split()[1]) / 1e6  # first line: usage_usec N
        except (OSError, ValueError, IndexError):
            pass
    for path in glob.glob("/sys/fs/cgroup/cpuacct/docker/*/cpuacct.usage"):
        try:
            out[path] = int(Path(path).read_text()) / 1e9
        except (OSError, ValueError):
            pass
    return out


def _busy_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy since boot (``/proc/stat``: all but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / os.sysconf("SC_CLK_TCK")


def _group(pid: str, driver: int) -> str | None:
    """Which part of the run process ``pid`` is: model server, driver, ray, docker engine; None: other or a
    process in a container (its CPU is counted from the container's cgroup)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
        cgroup = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return None
    if "/docker/" in cgroup or "/docker-" in cgroup:  # a container's cgroup (v1 / v2 layouts)
        return None
    # vLLM renames its processes (VLLM::EngineCore, VLLM::Worker); the driver's own command line names the launcher
    if int(pid) == driver:
        return "driver"
    if b"vllm.entrypoints" in cmdline or cmdline.startswith(b"VLLM") or b"llama_cpp" in cmdline:
        return "model server"
    if cmdline.startswith(b"ray::") or b"/ray/" in cmdline:
        return "ray"
    if comm in ("dockerd", "containerd", "runc", "docker-proxy") or comm.startswith("containerd-shim"):
        return "docker engine"
    return None


def _cpu_by_pid(driver: int) -> dict[str, tuple[str, float]]:
    """pid -> (group, CPU seconds) for the processes ``_group`` names. Reaped children are left out (a parent in
    the same group would count them twice); short-lived ones (runc, ``docker exec``) end up in "everything else"."""
    tick = os.sysconf("SC_CLK_TCK")
    out: dict[str, tuple[str, float]] = {}
    for stat in glob.glob("/proc/[0-9]*/stat"):
        pid = stat.split("/")[2]
        group = _group(pid, driver)
        if group is None:
            continue
        try:
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[pid] = (group, (int(fields[11]) + int(fields[12])) / tick)  # utime stime
    return out


class MemorySampler(threading.Thread):
    """Peak memory once a second; CPU seconds by part of the run (model server, driver, Ray, Docker engine,
    containers: deltas summed, so that processes and containers that come and go are counted while they live)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak, self.peak_procs, self.stop = pid, 0, 0, threading.Event()
        self.cpu: dict[str, float] = {}
        self.busy0, self.busy = _busy_cpu_s(), 0.0

    def run(self) -> None:
        last: dict[str, float] = {}
        seen: dict[str, float] = {}
        while not self.stop.wait(1.0):
            procs = _tree_rss(self.pid)
            self.peak_procs = max(self.peak_procs, procs)
            self.peak = max(self.peak, procs + _container_memory())
            self.busy = _busy_cpu_s() - self.busy0
            per = _container_cpu()
            self._add("containers", sum(v - last.get(k, 0.0) for k, v in per.items()))
            last = per
            first, now = not seen, _cpu_by_pid(self.pid)
            for pid, (group, used) in now.items():
                # A process first seen now counts from 0, unless this is the first sample (it was there before).
                self._add(group, used - seen.get(pid, used if first else 0.0))
            seen = {pid: used for pid, (_, used) in now.items()} or {"": 0.0}

    def _add(self, group: str, seconds: float) -> None:
        self.cpu[group] = self.cpu.get(group, 0.0) + max(0.0, seconds)


def _rollouts(run_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(run_dir.glob("*/*/rollout.json"))]


def _model_calls(run_dir: Path) -> list[dict]:
    """Every model call of the run: {messages, seed, started, ended, completion_tokens} from the trajectories."""
    calls = []
    for traj in sorted(run_dir.glob("*/*/trajectory.jsonl")):
        started_at = json.loads((traj.parent / "rollout.json").read_text())["timings"]["started_at"]
        messages: list[dict] = []
        for msg in read_jsonl(traj):
            extra = msg.get("extra") or {}
            if msg["role"] == "assistant" and "model_latency_s" in extra:
                ended = started_at + extra["elapsed_s"]
                calls.append({
                    "messages": list(messages),
                    "seed": extra.get("seed"),
                    "started": ended - extra["model_latency_s"],
                    "ended": ended,
                    "completion_tokens": extra["usage"]["completion_tokens"],
                })  # fmt: skip
            messages.append({"role": msg["role"], "content": msg["content"]})
    return calls


def run_batch(launcher: str, args: argparse.Namespace) -> Path:
    run_id = f"bench-{launcher}-n{args.n}-{int(time.time())}"
    cmd = [
        sys.executable, "-m", "agentbon", "run", args.suite, "-n", str(args.n),
        "--run-dir", args.out, "--run-id", run_id, "-c", f"model.launcher={launcher}",
    ]  # fmt: skip
    for item in args.c:
        cmd += ["-c", item]
    print("$", " ".join(cmd), flush=True)
    start = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sampler = MemorySampler(proc.pid)
    sampler.start()
    log = Path(args.out) / f"{run_id}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as f:
        for line in proc.stdout:  # type: ignore[union-attr]
            f.write(line)
            f.flush()
    rc = proc.wait()
    wall = time.monotonic() - start
    sampler.stop.set()
    sampler.join()
    run_dir = Path(args.out) / run_id
    print(f"[{launcher}] exit {rc}, log {log}")
    report(launcher, run_dir, wall, sampler)
    return run_dir


def report(launcher: str, run_dir: Path, wall: float, sampler: MemorySampler | None) -> None:
    rollouts = _rollouts(run_dir)
    events = list(read_jsonl(run_dir / "events.jsonl"))
    start_s = next((e.get("start_s") for e in events if e["type"] == "model_stats"), None)
    hit = next((e.get("prefix_cache_hit_rate") for e in events if e["type"] == "model_stats"), None)
    tokens = sum(r["usage"]["completion_tokens"] for r in rollouts)
    prompt = sum(r["usage"]["prompt_tokens"] for r in rollouts)
    cached = sum(r["usage"]["cached_tokens"] for r in rollouts)
    span = _generation_span(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text()) if (run_dir / "summary.json").exists() else {}
    metrics = summary.get("metrics") or {}
    curve = dict(zip(summary.get("ks") or [], (metrics.get("coverage") or {}).get("mean") or [], strict=False))
    selected = ((metrics.get("selectors") or {}).get(summary.get("primary_selector") or "", {}).get("selected") or {})
    print(f"[{launcher}] rollouts {len(rollouts)}, wall {wall:.0f}s, server start {start_s}s")
    print(f"[{launcher}] tokens: prompt {prompt} (cached {cached}), completion {tokens}")
    if span:
        print(f"[{launcher}] generation span {span:.0f}s: {tokens / span:.1f} completion tok/s aggregate")
    if sampler:
        print(
            f"[{launcher}] peak memory {sampler.peak / 2**30:.2f} GiB "
            f"(processes {sampler.peak_procs / 2**30:.2f} GiB + containers)"
        )
    if sampler:
        parts = ", ".join(f"{k} {v:.0f}" for k, v in sorted(sampler.cpu.items(), key=lambda kv: -kv[1]))
        rest = sampler.busy - sum(sampler.cpu.values())
        cores = os.cpu_count() or 1
        print(
            f"[{launcher}] CPU seconds over {wall:.0f}s wall ({cores} cores = {cores * wall:.0f}): {parts}, "
            f"everything else {rest:.0f}; the whole machine {sampler.busy:.0f}"
        )
    calls = _model_calls(run_dir)
    if calls:
        t0, t1 = min(c["started"] for c in calls), max(c["ended"] for c in calls)
        busy = sum(c["ended"] - c["started"] for c in calls)
        edges = sorted([(c["started"], 1) for c in calls] + [(c["ended"], -1) for c in calls])
        level, prev, at_or_above = 0, t0, 0.0
        target = _slots(run_dir)
        for t, step in edges:
            if level >= target:
                at_or_above += t - prev
            level, prev = level + step, t
        print(
            f"[{launcher}] model calls {len(calls)}: mean {busy / (t1 - t0):.1f} in flight over the span; "
            f"{at_or_above / (t1 - t0):.0%} of it with all {target} slots waiting on the model"
        )
    if hit is not None:
        print(f"[{launcher}] prefix-cache hit rate {hit}")
    print(f"[{launcher}] coverage pass@k {curve}; selected {selected.get('mean')}; resolved by task {_by_task(run_dir)}")


def _slots(run_dir: Path) -> int:
    from agentbon.config import load_config
    from agentbon.orchestrate.cluster import sandbox_slots

    return sandbox_slots(load_config([run_dir / "config.yaml"], []))


def _generation_span(run_dir: Path) -> float | None:
    calls = _model_calls(run_dir)
    if not calls:
        return None
    return max(c["ended"] for c in calls) - min(c["started"] for c in calls)


def _by_task(run_dir: Path) -> dict[str, str]:
    out = {}
    for task_dir in sorted(p for p in run_dir.iterdir() if p.is_dir()):
        grades = [json.loads(v.read_text())["status"] == "pass" for v in task_dir.glob("*/verdict.grade.json")]
        if grades:
            out[task_dir.name] = f"{sum(bool(g) for g in grades)}/{len(grades)}"
    return out


def replay(launcher: str, run_dir: Path, extra: list[str], limit: int) -> None:
    from agentbon.config import load_config
    from agentbon.models import client_for, local_server
    from agentbon.orchestrate.cluster import sandbox_slots

    config = load_config([run_dir / "config.yaml"], [*extra, f"model.launcher={launcher}"])
    slots = sandbox_slots(config)
    calls = sorted(_model_calls(run_dir), key=lambda c: c["started"])
    if not calls:
        print(f"[{launcher}] replay: the run recorded no model calls")
        return
    # Through agentbon: the completion tokens the run's server produced from its first request until the K-th
    # call (in start order) ended, each call's tokens spread evenly over its duration, over that window.
    every, calls = calls, calls[:limit] if limit else calls
    t0, t1 = calls[0]["started"], max(c["ended"] for c in calls)
    window_tokens = sum(
        c["completion_tokens"] * max(0.0, min(c["ended"], t1) - max(c["started"], t0)) / (c["ended"] - c["started"])
        for c in every
        if c["ended"] > c["started"]
    )
    server = local_server(config.model)
    with server as endpoint, client_for(config.model, endpoint) as model:

        def one(call: dict) -> int:
            r = model.chat(call["messages"], max_tokens=config.model.max_tokens, seed=call["seed"])
            return r.usage.completion_tokens

        start = time.monotonic()
        with ThreadPoolExecutor(slots) as pool:
            tokens = sum(pool.map(one, calls))
        wall = time.monotonic() - start
    ours, alone = window_tokens / (t1 - t0), tokens / wall
    print(
        f"[{launcher}] replay of {len(calls)} calls, {slots} at once: server alone {tokens} tokens in "
        f"{wall:.0f}s = {alone:.1f} tok/s; through agentbon {ours:.1f} tok/s; ratio {ours / alone:.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--launcher", action="append", choices=["llama-cpp", "vllm", "vllm-actors"])
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--suite", default=str(ROOT / "tasks" / "demo"))
    ap.add_argument("--out", default=str(ROOT / "runs" / "bench"))
    ap.add_argument("--replay", action="store_true", help="after each batch, replay its model calls on the server alone")
    ap.add_argument("--replay-only", metavar="RUN_DIR", help="replay an existing run's model calls; no batch")
    ap.add_argument("--replay-calls", type=int, default=0, help="replay only the first K calls (0: all)")
    ap.add_argument("-c", action="append", default=[], metavar="KEY=VALUE", help="config override for the batch")
    args = ap.parse_args()
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    launchers = args.launcher or ["llama-cpp"]
    if args.replay_only:
        for launcher in launchers:
            report(launcher, Path(args.replay_only), float("nan"), None)
            replay(launcher, Path(args.replay_only), args.c, args.replay_calls)
        return
    for launcher in launchers:
        run_dir = run_batch(launcher, args)
        if args.replay:
            replay(launcher, run_dir, args.c, args.replay_calls)


if __name__ == "__main__":
    main()
