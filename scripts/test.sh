#!/usr/bin/env bash
# Run agentbon's test suite on this machine, setting up whatever is missing first (Docker engine,
# base image, package, local model), then ruff and mypy. Extra arguments go to pytest, e.g. `-m "not slow"`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export RAY_AUTH_MODE=disabled
# Lint and types first: a finding fails the run like a failing test.
python3 -m ruff check .
python3 -m mypy agentbon
exec python3 -m pytest -q "$@"
