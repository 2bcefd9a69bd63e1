#!/usr/bin/env bash
# Make a Docker engine available to agentbon's sandboxes and build the base image. Idempotent: each step is
# skipped when already done. Steps: install docker.io (and debootstrap) if dockerd is absent; start dockerd in the
# background if the engine does not answer; wait for it (bounded); build or confirm the base image.
#
# Environment: PYTHON (default python3), AGENTBON_DOCKER_WAIT_S (default 90), DOCKERD_LOG (default
# /var/log/agentbon-dockerd.log), AGENTBON_SKIP_BASE=1 to stop after the engine is up.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
WAIT_S=${AGENTBON_DOCKER_WAIT_S:-90}
DOCKERD_LOG=${DOCKERD_LOG:-/var/log/agentbon-dockerd.log}

say() { echo "setup-docker: $*"; }
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"
  elif command -v sudo >/dev/null; then sudo -n "$@"
  else say "needs root for: $*"; return 1
  fi
}
engine_up() { command -v docker >/dev/null && docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

wait_for_engine() {  # $1: pid of the dockerd we started (empty if none)
  local waited=0
  until engine_up; do
    if [ -n "${1:-}" ] && ! kill -0 "$1" 2>/dev/null; then return 1; fi  # it died: no point waiting
    if [ "$waited" -ge "$WAIT_S" ]; then return 1; fi
    sleep 1
    waited=$((waited + 1))
  done
}

start_dockerd() {  # $@: extra dockerd flags; prints the pid
  as_root mkdir -p "$(dirname "$DOCKERD_LOG")"
  as_root sh -c "nohup dockerd $* >>'$DOCKERD_LOG' 2>&1 & echo \$!"
}

# 1. the engine's packages
if ! command -v dockerd >/dev/null; then
  say "installing docker.io"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io
fi
if ! command -v debootstrap >/dev/null; then  # the base image's registry-free path needs it
  say "installing debootstrap"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
fi

# 2. a running engine
if engine_up; then
  say "engine already running ($(docker version --format '{{.Server.Version}}'))"
else
  started=""
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null; then
    say "starting docker with systemctl"
    as_root systemctl start docker || true
  fi
  if ! wait_for_engine ""; then
    say "starting dockerd in the background (log: $DOCKERD_LOG)"
    started=$(start_dockerd)
    if ! wait_for_engine "$started"; then
      # Nested or locked-down machines: no overlayfs, no iptables. Retry with what works everywhere.
      say "dockerd did not come up; retrying with --storage-driver=vfs --iptables=false"
      as_root kill "$started" 2>/dev/null || true
      sleep 2
      started=$(start_dockerd --storage-driver=vfs --iptables=false)
      if ! wait_for_engine "$started"; then
        say "the Docker engine did not answer within ${WAIT_S}s; last lines of $DOCKERD_LOG:"
        as_root tail -n 30 "$DOCKERD_LOG" >&2 || true
        exit 1
      fi
    fi
  fi
  say "engine up ($(docker version --format '{{.Server.Version}}'))"
fi

# 3. the base image (cached by the hash of sandboxes/base; built with debootstrap where no registry answers)
if [ "${AGENTBON_SKIP_BASE:-0}" != 1 ]; then
  # root: debootstrap needs it; the same interpreter (PATH kept) so the installed agentbon is the one used
  as_root env PATH="$PATH" PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$(command -v "$PYTHON")" -m agentbon sandbox base
fi
