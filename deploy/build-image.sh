#!/usr/bin/env bash
# Builds the Airlock container image (deploy/Containerfile) with podman, without Docker Hub:
# the Debian 12 base image is made locally with debootstrap from a Debian mirror.
#
# Usage: deploy/build-image.sh [--tag IMAGE] [--base IMAGE] [--mirror URL] [--jobs N]
#                              [--rebuild-base] [--no-smoke]
#
#   --tag IMAGE      the image to build (default localhost/airlock:latest, the name
#                    deploy/compose.yaml and deploy/kubernetes/ use)
#   --base IMAGE     the Debian 12 base both stages start from (default
#                    localhost/airlock-base:bookworm); made with debootstrap when missing
#   --mirror URL     the Debian mirror (default $DEBIAN_MIRROR or http://deb.debian.org/debian)
#   --jobs N         compiler jobs inside the build stage (default $AIRLOCK_JOBS or 2)
#   --rebuild-base   make the base again even when it exists (e.g. for security updates)
#   --no-smoke       skip the final check (`airlock check` on the image's policy, inside the
#                    image's file system)
#
# Needs root (debootstrap, and podman's chroot isolation) and the Debian packages podman and
# debootstrap. The build runs with `--isolation chroot`, which works inside containers and CI
# runners where podman cannot create namespaces of its own. Docker users can build the same
# file with `docker build -f deploy/Containerfile .` from the repository root (its base is
# then debian:12-slim from Docker Hub).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tag=localhost/airlock:latest
base=localhost/airlock-base:bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
jobs=${AIRLOCK_JOBS:-2}
rebuild_base=0
smoke=1

die() { echo "build-image.sh: $*" >&2; exit 1; }
log() { echo "build-image.sh: $*" >&2; }

while [ $# -gt 0 ]; do
  case $1 in
    --tag) tag=${2:?--tag needs a value}; shift 2 ;;
    --base) base=${2:?--base needs a value}; shift 2 ;;
    --mirror) mirror=${2:?--mirror needs a value}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs a value}; shift 2 ;;
    --rebuild-base) rebuild_base=1; shift ;;
    --no-smoke) smoke=0; shift ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option '$1' (see --help)" ;;
  esac
done

[ "$(id -u)" -eq 0 ] || die "run as root (debootstrap and podman --isolation chroot need it)"
command -v podman > /dev/null || die "podman is missing: apt-get install podman"

work=$(mktemp -d "${TMPDIR:-/tmp}/airlock-image.XXXXXX")
cleanup() {
  # debootstrap leaves bind mounts behind when it is interrupted; never delete through them.
  if [ -d "$work/rootfs/proc" ]; then umount -R "$work/rootfs/proc" 2> /dev/null || true; fi
  if [ -d "$work/rootfs/sys" ]; then umount -R "$work/rootfs/sys" 2> /dev/null || true; fi
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# 1. The base: a minimal Debian 12 made with debootstrap, imported as an image.
if [ "$rebuild_base" -eq 1 ] || ! podman image exists "$base"; then
  command -v debootstrap > /dev/null || die "debootstrap is missing: apt-get install debootstrap"
  log "making the base image $base from $mirror (debootstrap, a few minutes)"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" \
    > "$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
  # Updates and security fixes come from the same mirror host (deb.debian.org serves both).
  security=${mirror%/debian}/debian-security
  cat > "$work/rootfs/etc/apt/sources.list" << EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
  # Like the official slim images: no apt caches, documentation or logs in the base.
  rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"* \
    "$work/rootfs/var/log/"*.log
  tar --numeric-owner --xattrs -C "$work/rootfs" -c . \
    | podman import --change 'CMD ["/bin/bash"]' - "$base" > /dev/null
  rm -rf --one-file-system "$work/rootfs"
fi

# 2. The build context: the files git knows about (tracked, or new and not ignored), so that
# build directories, certs/ (the CA key!) and editor droppings never enter an image.
mkdir "$work/context"
(cd "$root" && git ls-files -z --cached --others --exclude-standard) \
  | (cd "$root" && xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh) \
  | tar -C "$root" --null -T - -c \
  | tar -C "$work/context" -x
rm -rf "$work/context/certs"

# 3. The image.
log "building $tag from $base (--isolation chroot, $jobs jobs)"
podman build --isolation chroot --format docker --pull=never \
  --build-arg "BASE=$base" --build-arg "JOBS=$jobs" \
  -f "$work/context/deploy/Containerfile" -t "$tag" "$work/context"

# 4. Smoke check: the binary from the image, with the image's own libraries, checks the
# image's policy. `podman run` needs namespaces a CI container may not have, so the image's
# file system is mounted and entered with chroot instead (same files, same user).
if [ "$smoke" -eq 1 ]; then
  mnt=$(podman image mount "$tag")
  status=0
  chroot --userspec=10001:10001 "$mnt" /usr/local/bin/airlock --version || status=$?
  if [ "$status" -eq 0 ]; then
    chroot --userspec=10001:10001 "$mnt" /usr/local/bin/airlock check \
      --config /etc/airlock/policy.yaml || status=$?
  fi
  podman image unmount "$tag" > /dev/null
  [ "$status" -eq 0 ] || die "the binary in $tag does not run (status $status)"
fi
podman image inspect --format '{{.Id}} {{.Size}}' "$tag" \
  | { read -r id size; log "built $tag (${id:0:12}, $((size / 1048576)) MiB)"; }
