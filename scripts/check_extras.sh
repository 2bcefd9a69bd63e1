#!/usr/bin/env bash
# Check with pip's resolver (a dry run: nothing is installed or downloaded past metadata) that agentbon's GPU and
# critic extras install together at the newest vLLM this machine's package index offers: the same vLLM that
# `pip install vllm` alone would get. Holding vLLM back (a torch pin in another extra did, issue 16) fails.
# Needs the package index; test.sh runs it beside the tests. Prints one line per resolution.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

resolve() {  # resolve REPORT REQUIREMENT...: the versions pip would install, as a JSON report
  local report=$1
  shift
  $PY -m pip install --dry-run --ignore-installed --quiet --disable-pip-version-check --report "$report" "$@" \
    >"$report.log" 2>&1 || { echo "check_extras: pip could not resolve $*:" >&2; tail -n 20 "$report.log" >&2; exit 1; }
}

resolve "$out/extras.json" '.[gpu,critic]' &
extras=$!
resolve "$out/alone.json" vllm &
alone=$!
wait $extras
wait $alone

$PY - "$out/extras.json" "$out/alone.json" <<'EOF'
import json
import sys


def versions(path: str) -> dict[str, str]:
    report = json.load(open(path))
    return {item["metadata"]["name"].lower(): item["metadata"]["version"] for item in report["install"]}


extras, alone = versions(sys.argv[1]), versions(sys.argv[2])
print(f"check_extras: .[gpu,critic] resolves vllm {extras.get('vllm')} with torch {extras.get('torch')}")
print(f"check_extras: vllm alone resolves vllm {alone.get('vllm')} with torch {alone.get('torch')}")
if extras.get("vllm") != alone.get("vllm"):
    sys.exit(f"check_extras: agentbon's extras hold vLLM back: {extras.get('vllm')} instead of {alone.get('vllm')}")
EOF
