#!/usr/bin/env bash
# Set up everything (Docker engine, base image, package, local model), then run a real best-of-N batch
# over tasks/demo with the local model and print the report. Extra arguments go to `agentbon run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled}
N=${AGENTBON_DEMO_N:-8}
# The demo is there to show the whole curve: the two migration tasks run all N rollouts even after a pass
# (early stop keeps a fixed part of every task, docs/estimators.md; here that part is all of it).
exec python3 -m agentbon run tasks/demo -n "$N" -c early_stop_fixed="$N" "$@"
