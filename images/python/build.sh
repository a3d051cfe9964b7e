#!/usr/bin/env bash
# build.sh: build the glassroom Python kernel image WITHOUT a container
# registry: the root filesystem is made by mmdebstrap from Debian bookworm
# packages and loaded with `docker import`.
#
# Usage: images/python/build.sh        (as root; needs docker.io, mmdebstrap)
# Env:   IMAGE=repo/name   image repository (default glassroom/python-kernel)
#        MIRROR=URL        Debian mirror for bookworm and bookworm-updates
#                          (default: mmdebstrap's, i.e. deb.debian.org, plus
#                          bookworm-updates and bookworm-security)
#        SECURITY_MIRROR=URL  used with MIRROR (default
#                          http://deb.debian.org/debian-security)
#        FORCE=1           rebuild even if the inputs did not change
#
# The image is tagged <repo>:<first 12 hex of the inputs hash> and
# <repo>:latest and labelled io.glassroom.inputs-hash=<full hash>. The inputs
# are this script and the files next to it that go into the image
# (packages.txt, stubs.txt, mkstubs.sh, customize.sh, config/, users/,
# rootfs/). If an image with that tag and label exists, nothing is rebuilt.
# The tag is written to images/python/.image-tag and printed as the last line
# of stdout: "image: <repo>:<tag>".
#
# images/python/Dockerfile builds an equivalent image where a registry is
# available (FROM debian:bookworm-slim).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HERE/../.." && pwd)
IMAGE=${IMAGE:-glassroom/python-kernel}
SUITE=bookworm
T0=$(date +%s.%N)

stage() { echo "==> $*" >&2; }
die() { echo "build.sh: ERROR: $*" >&2; exit 1; }
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

# ---- inputs hash ---------------------------------------------------------------
# sha256 over "sha256  relative/path" lines of every input file, sorted by path.
inputs_hash() {
  (
    cd "$HERE"
    {
      printf '%s\n' build.sh packages.txt stubs.txt mkstubs.sh customize.sh
      find config users rootfs -type f 2>/dev/null
    } | LC_ALL=C sort -u | while IFS= read -r f; do
      # exec bits matter (customize.sh, rootfs files): include the mode.
      printf '%s %s\n' "$(stat -c %a "$f" | cut -c1)" "$(sha256sum "$f")"
    done
  ) | sha256sum | cut -d' ' -f1
}
HASH=$(inputs_hash)
TAG=${HASH:0:12}
REF="$IMAGE:$TAG"

finish() {
  docker tag "$REF" "$IMAGE:latest"
  printf '%s\n' "$REF" >"$HERE/.image-tag"
  local size
  size=$(docker image inspect -f '{{.Size}}' "$REF")
  echo "size: $((size / 1000000)) MB ($size bytes)"
  echo "image: $REF"
}

# ---- docker --------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  if [ -x "$REPO_ROOT/scripts/start-dockerd.sh" ]; then
    stage "docker engine not running; starting it"
    "$REPO_ROOT/scripts/start-dockerd.sh" >&2
  else
    die "docker engine not reachable (docker info failed)"
  fi
fi

if [ -z "${FORCE:-}" ] &&
  [ "$(docker image inspect -f '{{index .Config.Labels "io.glassroom.inputs-hash"}}' "$REF" 2>/dev/null)" = "$HASH" ]; then
  echo "kernel image up to date ($(elapsed)s)"
  finish
  exit 0
fi

# ---- root filesystem -------------------------------------------------------------
if ! command -v mmdebstrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    stage "installing mmdebstrap (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y mmdebstrap >&2 || { apt-get update >&2 && apt-get install -y mmdebstrap >&2; }
  fi
  command -v mmdebstrap >/dev/null 2>&1 ||
    die "mmdebstrap not found; install it with: apt-get install -y mmdebstrap"
fi
command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb not found (needs a Debian host)"

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/glassroom-kernel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

stage "building $REF (inputs hash $HASH)"
stage "[1/3] stub package for unused hard dependencies ($(grep -v '^[[:space:]]*\(#\|$\)' "$HERE/stubs.txt" | paste -sd' ' -))"
"$HERE/mkstubs.sh" "$HERE/stubs.txt" "$WORK/glassroom-kernel-stubs.deb"

PACKAGES=$(sed -e 's/#.*//' "$HERE/packages.txt" | tr -s ' \t\n' ' ' | sed 's/^ //; s/ $//')
[ -n "$PACKAGES" ] || die "packages.txt lists no packages"
stage "[2/3] mmdebstrap --variant=minbase $SUITE: $PACKAGES"

MIRRORS=()
if [ -n "${MIRROR:-}" ]; then
  MIRRORS=("deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main"
    "deb ${SECURITY_MIRROR:-http://deb.debian.org/debian-security} $SUITE-security main")
fi

# merged-usr hooks: create the /bin -> usr/bin etc. symlinks up front, the way
# debootstrap does, and install usr-is-merged; otherwise the essential
# init-system-helpers' "usrmerge | usr-is-merged" dependency installs usrmerge,
# which drags in full perl (~46 MB).
# Stubs first, so apt has them marked before resolving the real packages.
# The file-mirror-automount hooks make the local stub .deb visible to dpkg
# inside the chroot (apt passes its host path verbatim); the first customize
# hook removes the empty mount point they leave behind.
# stdin from /dev/null: mmdebstrap reads a sources.list from stdin when told
# "-"; never let it wait on a terminal or CI pipe.
GLASSROOM_CTX="$HERE" mmdebstrap \
  --variant=minbase \
  --aptopt='APT::Install-Recommends "false"' \
  --aptopt='APT::Install-Suggests "false"' \
  --dpkgopt="$HERE/config/dpkg-excludes" \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
  --include="$WORK/glassroom-kernel-stubs.deb" \
  --include="$PACKAGES" \
  --customize-hook="rm -rf \"\$1$WORK\"" \
  --customize-hook="$HERE/customize.sh" \
  "$SUITE" "$WORK/rootfs.tar" "${MIRRORS[@]}" </dev/null

stage "[3/3] docker import ($(du -m "$WORK/rootfs.tar" | cut -f1) MB tarball)"
CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
docker import \
  --message "glassroom python kernel, inputs $HASH" \
  --change 'USER 1000:1000' \
  --change 'WORKDIR /workspace' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV HOME=/workspace' \
  --change 'ENV MPLBACKEND=module://matplotlib_inline.backend_inline' \
  --change 'ENV MPLCONFIGDIR=/tmp/matplotlib' \
  --change 'ENV PYDEVD_DISABLE_FILE_VALIDATION=1' \
  --change 'ENTRYPOINT ["/usr/bin/tini", "--"]' \
  --change 'CMD ["python3"]' \
  --change "LABEL io.glassroom.inputs-hash=$HASH" \
  --change 'LABEL org.opencontainers.image.title="glassroom python kernel"' \
  --change "LABEL org.opencontainers.image.created=$CREATED" \
  --change 'LABEL org.opencontainers.image.source="https://github.com/glassroom/glassroom"' \
  "$WORK/rootfs.tar" "$REF" >/dev/null

echo "built $REF in $(elapsed)s"
finish
