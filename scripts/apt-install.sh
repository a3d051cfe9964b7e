#!/usr/bin/env bash
# apt-install.sh [apt-get install options...] PACKAGE...: apt-get install, as
# root, whatever the state of this machine's package lists.
#
# A fresh machine may have no lists at all, or lists older than the mirror
# (their files are gone: 404). So: a package that has no installation
# candidate, or an install that fails, refreshes the lists (apt-get update)
# and tries once more; a package still without a candidate is named, with
# the suites this machine's sources hold, and the script exits 100 (as
# apt-get does). Arguments that start with "-" go to apt-get install as
# they are; so do paths of .deb files (they need no candidate).
# Every install script of the project goes through it.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
opts=() pkgs=()
for a in "$@"; do
  case "$a" in
  -*) opts+=("$a") ;;
  *) pkgs+=("$a") ;;
  esac
done
[ ${#pkgs[@]} -gt 0 ] || exit 0
say() { echo "apt-install: $*" >&2; }

# The suites of this machine's apt sources (one-line and deb822 files).
suites() {
  {
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/ && $i !~ /=/) { print $(i + 1); break } }'
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk 'tolower($1) == "suites:" { for (i = 2; i <= NF; i++) print $i }'
  } | awk 'NF && !seen[$0]++' | paste -sd' ' -
}

# no_candidate prints the packages (not .deb files) apt cannot install now.
no_candidate() {
  local p c
  for p in "${pkgs[@]}"; do
    case "$p" in */* | *.deb) continue ;; esac
    p=${p%-} # "name-" removes a package: it needs no candidate
    c=$(apt-cache policy "$p" 2>/dev/null | awk '$1 == "Candidate:" { print $2 }')
    if [ -z "$c" ] || [ "$c" = "(none)" ]; then
      printf '%s\n' "$p"
    fi
  done
}

missing=$(no_candidate)
if [ -n "$missing" ]; then
  say "no installation candidate for $(echo "$missing" | paste -sd' ' -) in the current package lists: running apt-get update"
  apt-get update -q >&2 || say "apt-get update failed (the install below may fail too)"
  missing=$(no_candidate)
  if [ -n "$missing" ]; then
    for p in $missing; do
      say "ERROR: package $p is in none of this machine's apt suites ($(suites)), even after apt-get update"
    done
    exit 100
  fi
fi
if ! apt-get install -y -q ${opts[@]+"${opts[@]}"} "${pkgs[@]}"; then
  say "apt-get install ${pkgs[*]} failed: refreshing the package lists (apt-get update) and trying once more"
  apt-get update -q >&2
  apt-get install -y -q ${opts[@]+"${opts[@]}"} "${pkgs[@]}"
fi
