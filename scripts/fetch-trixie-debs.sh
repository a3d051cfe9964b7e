#!/usr/bin/env bash
# fetch-trixie-debs.sh LIST DIR: download into DIR the Debian trixie (13)
# packages LIST names, for installing them on bookworm (12).
#
# LIST is images/python/trixie.txt: one package a line, its name then the
# lowest version that will do ('#' starts a comment). The packages must be
# Architecture: all (pure Python), so they install on bookworm's
# interpreter; their dependencies come from bookworm (apt resolves them when
# the .deb files are installed: apt-get install DIR/*.deb, or mmdebstrap
# --include=DIR/x.deb).
#
# Trixie never becomes one of this machine's apt sources: apt reads a
# sources.list of its own (trixie main, signed by Debian's archive keyring,
# which has trixie's keys on bookworm) with its own package lists and
# cache, in a temporary directory that is removed on exit. The system's
# sources, lists and caches are not touched, so nothing else can come from
# trixie, now or at a later apt-get upgrade.
#
# It fails if a package is missing from trixie, older than LIST asks, or not
# Architecture: all. Prints the .deb files it wrote, one a line.
#
# Env: TRIXIE_MIRROR=URL  the Debian mirror (default $MIRROR if set, else
#                         http://deb.debian.org/debian)
# Needs apt-get and dpkg-deb; not root (as root, apt's _apt user downloads).
set -euo pipefail

list=${1:?usage: fetch-trixie-debs.sh LIST DIR}
dir=${2:?usage: fetch-trixie-debs.sh LIST DIR}
mirror=${TRIXIE_MIRROR:-${MIRROR:-http://deb.debian.org/debian}}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

die() { echo "fetch-trixie-debs: ERROR: $*" >&2; exit 1; }

[ -r "$list" ] || die "no list $list"
[ -r "$keyring" ] || die "no $keyring (apt-get install debian-archive-keyring)"
mapfile -t lines < <(sed -e 's/#.*//' "$list" | awk 'NF')
[ ${#lines[@]} -gt 0 ] || die "$list names no package"

work=$(mktemp -d "${TMPDIR:-/tmp}/trixie-apt.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/preferences.d" "$work/lists/partial" "$work/cache/archives/partial" "$work/debs" "$dir"
# target=Packages: only the package index (no translations, no DEP-11).
printf 'deb [signed-by=%s target=Packages] %s trixie main\n' "$keyring" "$mirror" >"$work/sources.list"
# As root, apt downloads as the _apt user: it must be able to write there.
chmod 0755 "$work"
if [ "$(id -u)" = 0 ] && id _apt >/dev/null 2>&1; then
  chown -R _apt "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
fi
apt_private=(
  -o Dir::Etc::sourcelist="$work/sources.list"
  -o Dir::Etc::sourceparts=-
  -o Dir::Etc::preferences="$work/preferences"
  -o Dir::Etc::preferencesparts="$work/preferences.d"
  -o Dir::State::Lists="$work/lists"
  -o Dir::Cache="$work/cache"
  -o APT::Get::List-Cleanup=false
)
apt-get "${apt_private[@]}" -q update >&2 || die "apt-get update (trixie at $mirror) failed"

names=()
for line in "${lines[@]}"; do
  read -r name min extra <<<"$line"
  [ -n "${min:-}" ] && [ -z "${extra:-}" ] || die "$list: want \"package minimum-version\", got \"$line\""
  # name/trixie: trixie's version even if this machine has another one.
  names+=("$name/trixie")
done
(cd "$work/debs" && apt-get "${apt_private[@]}" -q download "${names[@]}" >&2) ||
  die "apt-get download ${names[*]} failed"

for line in "${lines[@]}"; do
  read -r name min _ <<<"$line"
  deb=$(find "$work/debs" -maxdepth 1 -name "${name}_*.deb" | head -n1)
  [ -n "$deb" ] || die "trixie has no $name"
  got=$(dpkg-deb -f "$deb" Version)
  arch=$(dpkg-deb -f "$deb" Architecture)
  [ "$arch" = all ] || die "$name $got is Architecture: $arch, not all: it would need trixie's libraries"
  dpkg --compare-versions "$got" ge "$min" || die "trixie's $name is $got, older than $min"
  echo "fetch-trixie-debs: $name $got" >&2
  cp "$deb" "$dir/"
  printf '%s\n' "$dir/$(basename "$deb")"
done
