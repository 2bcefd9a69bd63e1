#!/usr/bin/env bash
# Run agentbon's test suite on this machine, setting up whatever is missing first (Docker engine,
# base image, package, local model), then ruff and mypy. Extra arguments go to pytest, e.g. `-m "not slow"`.
# Beside the tests, pip's resolver checks that the gpu and critic extras install together at the newest vLLM
# (scripts/check_extras.sh; AGENTBON_CHECK_EXTRAS=0 skips it, e.g. without a package index).
set -euo pipefail
cd "$(dirname "$0")/.."
# The suite exercises vLLM's CPU build wherever it runs, even on a CPU where `auto` would not choose it.
AGENTBON_SETUP_VLLM=${AGENTBON_SETUP_VLLM:-1} bash scripts/setup.sh
export RAY_AUTH_MODE=disabled
# Compiled modules written once and reused: the tests start hundreds of Python processes (Ray workers, drivers,
# CLI runs) that import agentbon, and an environment that forbids writing bytecode has each compile it again.
unset PYTHONDONTWRITEBYTECODE
# Lint and types first: a finding fails the run like a failing test.
python3 -m ruff check .
python3 -m mypy agentbon
extras=""
if [ "${AGENTBON_CHECK_EXTRAS:-1}" != 0 ]; then
  log=$(mktemp)
  bash scripts/check_extras.sh >"$log" 2>&1 &
  extras=$!
fi
# Two pytest-xdist workers (AGENTBON_TEST_WORKERS, 0 for one process): most tests wait on Docker, Ray or a
# subprocess, so a second worker overlaps those waits; the tests that load a model server run on one worker in
# turn (tests/conftest.py), and each worker labels its own sandboxes.
workers=${AGENTBON_TEST_WORKERS:-2}
parallel=()
if [ "$workers" != 0 ] && python3 -c "import xdist" 2>/dev/null; then parallel=(-n "$workers" --dist loadgroup); fi
rc=0
python3 -m pytest -q --durations=25 "${parallel[@]}" "$@" || rc=$?
if [ -n "$extras" ]; then
  if wait "$extras"; then cat "$log"; else cat "$log"; echo "scripts/check_extras.sh failed" >&2; [ "$rc" != 0 ] || rc=1; fi
fi
exit "$rc"
