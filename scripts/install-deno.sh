#!/bin/sh
# Installs Deno (the JavaScript and TypeScript kernels: `deno jupyter
# --kernel`) at DESTDIR/usr/local/bin/deno: DESTDIR is "" for this host
# (the local runtime), a root file system for the kernel image.
#
# Deno comes from the npm registry (the binary ships inside the package
# @deno/linux-x64-glibc), pinned by version and checked against the
# registry's sha1 before use; the tarball is cached under
# $GLASSROOM_CACHE (default /var/cache/glassroom) so a second run needs no
# network. Idempotent: an installed binary of the pinned version is kept.
set -eu
VERSION=2.9.6
SHA1=ba7d14f2692d51cda7b71aaf8ddb7d88a5b47eb6
DEST=${1:-}
CACHE=${GLASSROOM_CACHE:-/var/cache/glassroom}
BIN="$DEST/usr/local/bin/deno"

if [ -x "$BIN" ] && "$BIN" --version 2>/dev/null | head -n1 | grep -qx "deno $VERSION .*"; then
	exit 0
fi
case "$(uname -m)" in
x86_64) PKG=linux-x64-glibc ;;
aarch64) PKG=linux-arm64-glibc; SHA1= ;;
*) echo "install-deno: no Deno build for $(uname -m)" >&2; exit 1 ;;
esac
mkdir -p "$CACHE"
TGZ="$CACHE/deno-$PKG-$VERSION.tgz"
if [ ! -s "$TGZ" ] || { [ -n "$SHA1" ] && ! echo "$SHA1  $TGZ" | sha1sum -c --quiet - 2>/dev/null; }; then
	TMP=$(mktemp -d)
	(cd "$TMP" && npm pack --silent "@deno/$PKG@$VERSION" >/dev/null)
	mv "$TMP"/deno-*.tgz "$TGZ.part"
	rm -rf "$TMP"
	if [ -n "$SHA1" ] && ! echo "$SHA1  $TGZ.part" | sha1sum -c --quiet -; then
		rm -f "$TGZ.part"
		echo "install-deno: checksum mismatch for @deno/$PKG@$VERSION" >&2
		exit 1
	fi
	mv "$TGZ.part" "$TGZ"
fi
mkdir -p "$DEST/usr/local/bin"
tar -xzf "$TGZ" -O package/deno > "$BIN.part"
chmod 0755 "$BIN.part"
mv "$BIN.part" "$BIN"
"$BIN" --version | head -n1
