#!/usr/bin/env bash
# Set up everything (Docker engine, base image, package, local model), then run a real best-of-N batch
# over tasks/demo with the local model and print the report. Extra arguments go to `agentbon run`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export RAY_AUTH_MODE=${RAY_AUTH_MODE:-disabled}
# N: 8 where the model server chosen for this machine streams fast enough for 80 rollouts in about 40 minutes, else 4
# (or 2): the demo should end in well under an hour on any 2-core machine (docs/models.md, "The demo's N").
N=${AGENTBON_DEMO_N:-$(python3 -c 'from agentbon.config import ModelConfig; from agentbon.models.choice import choose, demo_n
from agentbon.tasks import load_suite; print(demo_n(choose(ModelConfig()), len(load_suite("tasks/demo")[0])))')}
echo "demo: best-of-$N over tasks/demo (AGENTBON_DEMO_N=8 for more)"
# The demo is there to show the whole curve: the two migration tasks run all N rollouts even after a pass
# (early stop keeps a fixed part of every task, docs/estimators.md; here that part is all of it).
exec python3 -m agentbon run tasks/demo -n "$N" -c early_stop_fixed="$N" "$@"
