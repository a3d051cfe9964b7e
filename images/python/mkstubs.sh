#!/bin/sh
# mkstubs.sh STUBS_TXT OUT_DEB
# Builds "glassroom-kernel-stubs", an empty Debian package that Provides every
# package named in STUBS_TXT (see stubs.txt for why). The Provides are
# versioned (= 9999) so versioned dependencies such as
# "unicode-data (>= 14.0.0)" are satisfied too. Needs only dpkg-deb.
set -eu
stubs=$1
out=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
provides=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$stubs" | grep -v '^$' |
  sed 's/$/ (= 9999)/' | paste -sd, - | sed 's/,/, /g')
mkdir -p "$work/DEBIAN"
cat >"$work/DEBIAN/control" <<CONTROL
Package: glassroom-kernel-stubs
Version: 1
Architecture: all
Maintainer: glassroom <glassroom@localhost>
Priority: optional
Section: misc
Provides: $provides
Description: placeholders for packages the glassroom kernel does not need
 Satisfies hard dependencies on packages that are never used at run time
 in the glassroom Python kernel image (see images/python/stubs.txt).
CONTROL
dpkg-deb --root-owner-group -Zgzip --build "$work" "$out" >/dev/null
