#!/usr/bin/env bash
# Build the agentbon base image with no registry reachable: debootstrap a minimal Debian bookworm rootfs with the
# packages in packages.txt, apply the Dockerfile's ENV/CMD lines, and `docker import` it as TAG.
# Usage: build-rootfs.sh TAG [MIRROR]      (root, debootstrap and a running Docker engine; about a minute)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
tag=${1:?usage: build-rootfs.sh TAG [MIRROR]}
mirror=${2:-${AGENTBON_DEBIAN_MIRROR:-http://deb.debian.org/debian}}
suite=bookworm

if [ "$(id -u)" != 0 ]; then
  echo "build-rootfs.sh: debootstrap needs root (run with sudo)" >&2
  exit 2
fi
if ! command -v debootstrap >/dev/null; then
  echo "build-rootfs.sh: debootstrap is not installed: apt-get install -y debootstrap" >&2
  exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/agentbon-rootfs.XXXXXX")
cleanup() {
  # debootstrap mounts these inside the target; never delete through a live mount
  for m in dev/pts dev sys proc; do umount -l "$work/rootfs/$m" 2>/dev/null || true; done
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

packages=$(grep -v '^\s*#' "$here/packages.txt" | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
echo "build-rootfs.sh: debootstrap $suite from $mirror with: $packages"
debootstrap --variant=minbase --include="$packages" "$suite" "$work/rootfs" "$mirror"

# Slim like debian:*-slim: no package lists or caches in the image.
chroot "$work/rootfs" apt-get clean
rm -rf "$work/rootfs"/var/lib/apt/lists/* "$work/rootfs"/var/cache/apt/*.bin "$work/rootfs"/tmp/* \
  "$work/rootfs"/var/log/*.log "$work/rootfs"/var/log/apt/*

changes=()
while IFS= read -r line; do
  changes+=(--change "$line")
done < <(grep -E '^(ENV|CMD|WORKDIR) ' "$here/Dockerfile")

echo "build-rootfs.sh: importing as $tag"
tar --numeric-owner -C "$work/rootfs" -c . | docker import "${changes[@]}" - "$tag"
