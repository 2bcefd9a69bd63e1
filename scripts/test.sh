#!/usr/bin/env bash
# Run agentbon's test suite on this machine, setting up whatever is missing first (Docker engine,
# base image, package, local model). Extra arguments go to pytest, e.g. `-m "not slow"`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export RAY_AUTH_MODE=disabled
exec python3 -m pytest -q "$@"
