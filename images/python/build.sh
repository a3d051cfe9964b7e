#!/usr/bin/env bash
# build.sh: build the glassroom Python kernel image WITHOUT a container
# registry: the root filesystem is made by mmdebstrap from Debian bookworm
# packages (and a few from trixie: trixie.txt) and loaded with `docker import`.
#
# Usage: images/python/build.sh        (as root; needs docker.io, mmdebstrap,
#                                       and npm unless Deno is cached)
# Env:   IMAGE=repo/name   image repository (default glassroom/python-kernel)
#        MIRROR=URL        Debian mirror for bookworm and bookworm-updates
#                          (default: mmdebstrap's, i.e. deb.debian.org, plus
#                          bookworm-updates and bookworm-security), and for
#                          trixie.txt's packages unless TRIXIE_MIRROR is set
#        SECURITY_MIRROR=URL  used with MIRROR (default
#                          http://deb.debian.org/debian-security)
#        SUITE=trixie      build from another Debian suite (a trial: the suite
#                          goes into the inputs hash; default bookworm)
#        FORCE=1           rebuild even if the inputs did not change
#        GLASSROOM_CACHE=DIR  where scripts/install-deno.sh keeps Deno's
#                          tarball (default /var/cache/glassroom)
#
# The image is tagged <repo>:<first 12 hex of the inputs hash> and
# <repo>:latest and labelled io.glassroom.inputs-hash=<full hash>. The inputs
# are this script, the files next to it that go into the image
# (packages.txt, libraries.txt, trixie.txt, stubs.txt, mkstubs.sh, customize.sh, kernels.sh,
# config/, users/, rootfs/), scripts/install-deno.sh (Deno's pinned version
# and checksum), scripts/fetch-trixie-debs.sh and the kernel registry's
# probes and smoke commands (`glassroom kernels --probes`). If an image with
# that tag and label exists, nothing is rebuilt.
#
# On bookworm, the packages of trixie.txt (ipywidgets 8 and its companions,
# Architecture: all) come from trixie: scripts/fetch-trixie-debs.sh
# downloads them with an apt configuration of its own and mmdebstrap
# installs the .deb files with the rest (their dependencies from bookworm);
# trixie is never an apt source of the image. With SUITE=trixie they are
# ordinary packages of the suite.
#
# The image is labelled io.glassroom.kernels=<names> (comma-separated,
# python3 first): the kernels it holds, found by the kernel registry's probes
# (`glassroom kernels --root`, kernel/kernels) in the root filesystem and each
# checked in the finished image (its registry entry's smoke command) before
# the image is tagged. The Docker runtime reads the label.
# The tag is written to images/python/.image-tag and printed as the last line
# of stdout: "image: <repo>:<tag>".
#
# images/python/Dockerfile builds an equivalent image where a registry is
# available (FROM debian:bookworm-slim).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$HERE/../.." && pwd)
IMAGE=${IMAGE:-glassroom/python-kernel}
DEFAULT_SUITE=bookworm
SUITE=${SUITE:-$DEFAULT_SUITE}
T0=$(date +%s.%N)

stage() { echo "==> $*" >&2; }
die() { echo "build.sh: ERROR: $*" >&2; exit 1; }
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'; }

# ---- the kernel registry ---------------------------------------------------------
# Which kernels the root file system has, and how each is checked, is the
# kernel registry's to say (kernel/kernels): `glassroom kernels`, built here
# as `make build` builds it.
GO=${GO:-$(command -v go 2>/dev/null || echo /usr/local/go/bin/go)}
GLASSROOM_BIN="$REPO_ROOT/bin/glassroom"
(cd "$REPO_ROOT" && CGO_ENABLED=0 "$GO" build -trimpath -o "$GLASSROOM_BIN" ./cmd/glassroom) ||
  die "cannot build $GLASSROOM_BIN (Go: $GO)"
PROBES=$("$GLASSROOM_BIN" kernels --probes) || die "glassroom kernels --probes failed"

# ---- inputs hash ---------------------------------------------------------------
# sha256 over "sha256  relative/path" lines of every input file, sorted by path.
inputs_hash() {
  (
    cd "$HERE"
    {
      printf '%s\n' build.sh packages.txt libraries.txt trixie.txt stubs.txt mkstubs.sh customize.sh kernels.sh \
        ../../scripts/install-deno.sh ../../scripts/fetch-trixie-debs.sh
      find config users rootfs -type f 2>/dev/null
    } | LC_ALL=C sort -u | while IFS= read -r f; do
      # exec bits matter (customize.sh, rootfs files): include the mode.
      printf '%s %s\n' "$(stat -c %a "$f" | cut -c1)" "$(sha256sum "$f")"
    done
    # The registry's probes and smoke checks.
    printf 'probes %s\n' "$PROBES"
    # The suite, when SUITE overrides the default (a trial build).
    [ "$SUITE" = "$DEFAULT_SUITE" ] || printf 'suite %s\n' "$SUITE"
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
    "$REPO_ROOT/scripts/apt-install.sh" mmdebstrap >&2
  fi
  command -v mmdebstrap >/dev/null 2>&1 ||
    die "mmdebstrap not found; install it with: apt-get install -y mmdebstrap"
fi
command -v dpkg-deb >/dev/null 2>&1 || die "dpkg-deb not found (needs a Debian host)"
# scripts/install-deno.sh fetches Deno with npm unless its tarball is cached.
if ! command -v npm >/dev/null 2>&1 &&
  ! ls "${GLASSROOM_CACHE:-/var/cache/glassroom}"/deno-*.tgz >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    stage "installing npm (apt-get), for Deno"
    export DEBIAN_FRONTEND=noninteractive
    "$REPO_ROOT/scripts/apt-install.sh" npm >&2
  fi
  command -v npm >/dev/null 2>&1 || die "npm not found (Deno comes from the npm registry); install it with: apt-get install -y npm"
fi

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/glassroom-kernel.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# The build must leave the host as it found it: its apt package lists and
# cache (a hook that broke mmdebstrap's apt configuration once made its
# clean-up empty the host's lists, and the next apt-get install on a fresh
# machine found no package) and its mounts (mmdebstrap's hooks bind-mount
# the local .deb files). host_apt prints what the host's apt has now.
host_apt() {
  printf 'lists %s cache %s\n' \
    "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages*' 2>/dev/null | wc -l)" \
    "$(find /var/cache/apt -maxdepth 1 -name '*.bin' 2>/dev/null | wc -l)"
}
HOST_APT_BEFORE=$(host_apt)
check_host() {
  local after
  after=$(host_apt)
  if [ "$(echo "$HOST_APT_BEFORE" | awk '{print $2}')" -gt 0 ] && [ "$(echo "$after" | awk '{print $2}')" -eq 0 ]; then
    die "the build emptied this host's apt package lists (/var/lib/apt/lists: $HOST_APT_BEFORE before, $after after); run apt-get update to repair them"
  fi
  if grep -qF -e " $WORK" -e " /tmp/mmdebstrap." /proc/self/mountinfo; then
    die "the build left mounts behind: $(grep -F -e " $WORK" -e " /tmp/mmdebstrap." /proc/self/mountinfo | awk '{print $5}' | paste -sd' ' -)"
  fi
}

stage "building $REF (inputs hash $HASH)"
stage "[1/4] stub package for unused hard dependencies ($(grep -v '^[[:space:]]*\(#\|$\)' "$HERE/stubs.txt" | paste -sd' ' -))"
"$HERE/mkstubs.sh" "$HERE/stubs.txt" "$WORK/glassroom-kernel-stubs.deb"

# packages.txt: one package a line; libraries.txt: "import-name package";
# trixie.txt: "package lowest-version".
TRIXIE=$(sed -e 's/#.*//' "$HERE/trixie.txt" | awk 'NF { print $1 }' | tr -s ' \t\n' ' ' | sed 's/^ //; s/ $//')
PACKAGES=$({
  sed -e 's/#.*//' "$HERE/packages.txt"
  sed -e 's/#.*//' "$HERE/libraries.txt" | awk 'NF { print $2 }'
  printf '%s\n' $TRIXIE
} | awk 'NF && !seen[$1]++' | tr -s ' \t\n' ' ' | sed 's/^ //; s/ $//')
[ -n "$PACKAGES" ] || die "packages.txt lists no packages"
# On bookworm, trixie.txt's packages are .deb files from trixie instead.
TRIXIE_DEBS=()
if [ "$SUITE" = bookworm ] && [ -n "$TRIXIE" ]; then
  stage "[2/4] fetching from trixie: $TRIXIE"
  mkdir -p "$WORK/trixie"
  chmod 0755 "$WORK" "$WORK/trixie"
  mapfile -t TRIXIE_DEBS < <("$REPO_ROOT/scripts/fetch-trixie-debs.sh" "$HERE/trixie.txt" "$WORK/trixie")
  [ ${#TRIXIE_DEBS[@]} -gt 0 ] || die "fetch-trixie-debs.sh fetched nothing"
  PACKAGES=$(printf '%s\n' $PACKAGES | awk -v t=" $TRIXIE " 'index(t, " " $1 " ") == 0' | paste -sd' ' -)
fi
INCLUDE_DEBS=("--include=$WORK/glassroom-kernel-stubs.deb")
for d in ${TRIXIE_DEBS[@]+"${TRIXIE_DEBS[@]}"}; do
  INCLUDE_DEBS+=("--include=$d")
done
stage "[2/4] mmdebstrap --variant=minbase $SUITE: $PACKAGES${TRIXIE_DEBS[*]:+ + ${TRIXIE_DEBS[*]##*/}}"

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
# The file-mirror-automount hooks make the local .deb files (the stubs and
# trixie's) visible to dpkg
# inside the chroot (apt passes its host path verbatim); the first customize
# hook removes the empty mount point they leave behind. Deno goes in before
# customize.sh, which lists the kernels the root filesystem holds.
# The JDK's postinst registers its man pages with update-alternatives, which
# fails when man1 is missing (dpkg-excludes drops /usr/share/man): the
# essential hook makes the empty directory.
# stdin from /dev/null: mmdebstrap reads a sources.list from stdin when told
# "-"; never let it wait on a terminal or CI pipe.
GLASSROOM_CTX="$HERE" GLASSROOM_BIN="$GLASSROOM_BIN" mmdebstrap \
  --variant=minbase \
  --aptopt='APT::Install-Recommends "false"' \
  --aptopt='APT::Install-Suggests "false"' \
  --dpkgopt="$HERE/config/dpkg-excludes" \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --hook-dir=/usr/share/mmdebstrap/hooks/file-mirror-automount \
  --essential-hook='mkdir -p "$1/usr/share/man/man1"' \
  "${INCLUDE_DEBS[@]}" \
  --include="$PACKAGES" \
  --customize-hook="rm -rf \"\$1$WORK\"" \
  --customize-hook="\"$REPO_ROOT/scripts/install-deno.sh\" \"\$1\" >&2" \
  --customize-hook="$HERE/customize.sh" \
  "$SUITE" "$WORK/rootfs.tar" "${MIRRORS[@]}" </dev/null

check_host

KERNELS=$(tar -xOf "$WORK/rootfs.tar" ./etc/glassroom/kernels)
case "$KERNELS" in
python3 | python3,*) ;;
*) die "the root filesystem holds no python3 kernel (kernels.sh found \"$KERNELS\")" ;;
esac
stage "[3/4] docker import ($(du -m "$WORK/rootfs.tar" | cut -f1) MB tarball; kernels $KERNELS)"
CREATED=$(date -u +%Y-%m-%dT%H:%M:%SZ)
docker import \
  --message "glassroom python kernel, inputs $HASH" \
  --change 'USER 1000:1000' \
  --change 'WORKDIR /home/user' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV HOME=/home/user' \
  --change 'ENV MPLBACKEND=module://matplotlib_inline.backend_inline' \
  --change 'ENV MPLCONFIGDIR=/tmp/matplotlib' \
  --change 'ENV PYDEVD_DISABLE_FILE_VALIDATION=1' \
  --change 'ENV DENO_DIR=/tmp/deno' \
  --change 'ENV DENO_NO_UPDATE_CHECK=1' \
  --change 'ENV DENO_NO_PROMPT=1' \
  --change 'ENTRYPOINT ["/usr/bin/tini", "--"]' \
  --change 'CMD ["python3"]' \
  --change "LABEL io.glassroom.inputs-hash=$HASH" \
  --change "LABEL io.glassroom.kernels=$KERNELS" \
  --change 'LABEL org.opencontainers.image.title="glassroom python kernel"' \
  --change "LABEL org.opencontainers.image.created=$CREATED" \
  --change 'LABEL org.opencontainers.image.source="https://github.com/glassroom/glassroom"' \
  "$WORK/rootfs.tar" "$REF" >/dev/null

# ---- check -----------------------------------------------------------------------
# Each kernel of the label must load in the image (its registry entry's Smoke
# command) as a kernel container runs it: another uid, read-only root, tmpfs /tmp, no network. A failure removes
# the image, so the next run builds again instead of finding it up to date.
stage "[4/4] checking the kernels in the image: $KERNELS"
check_kernel() {
  local smoke
  smoke=$("$GLASSROOM_BIN" kernels --smoke "$1") || die "the registry has no kernel $1"
  mapfile -t args <<<"$smoke" # the registry's smoke command, one argument a line
  set -- "${args[@]}"
  docker run --rm --network none --read-only --tmpfs /tmp:mode=1777 --user 300000:300000 \
    --cap-drop ALL --security-opt no-new-privileges "$REF" "$@" >/dev/null
}
for k in $(printf '%s' "$KERNELS" | tr ',' ' '); do
  if ! out=$(check_kernel "$k" 2>&1); then
    docker rmi "$REF" >/dev/null 2>&1 || true
    die "kernel $k does not load in the image (image removed): $out"
  fi
done

echo "built $REF in $(elapsed)s"
finish
