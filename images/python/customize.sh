#!/bin/sh
# customize.sh ROOT
# Final touches for the glassroom Python kernel image, applied to the root
# filesystem at ROOT after all packages are installed:
#   - mmdebstrap runs it as a --customize-hook (ROOT = the new chroot);
#   - the Dockerfile runs it inside the image (ROOT = /).
# It only uses paths under ROOT (no chroot), so it works the same in both.
# Files it reads are next to it (users/, rootfs/) unless GLASSROOM_CTX says
# otherwise.
set -eu
root=${1:?usage: customize.sh ROOT}
ctx=${GLASSROOM_CTX:-$(cd "$(dirname "$0")" && pwd)}
root=${root%/}

echo "customize: sandbox user (uid/gid 1000) and /workspace"
for db in passwd group shadow gshadow; do
  [ -f "$root/etc/$db" ] || continue
  while IFS= read -r line; do
    name=${line%%:*}
    grep -q "^$name:" "$root/etc/$db" || printf '%s\n' "$line" >>"$root/etc/$db"
  done <"$ctx/users/$db"
done
mkdir -p "$root/workspace"
chown 1000:1000 "$root/workspace"
chmod 0755 "$root/workspace"

echo "customize: config files from rootfs/"
(cd "$ctx/rootfs" && find . -type f) | while IFS= read -r f; do
  mode=0644
  [ -x "$ctx/rootfs/$f" ] && mode=0755
  install -D -o 0 -g 0 -m "$mode" "$ctx/rootfs/$f" "$root/${f#./}"
done

echo "customize: removing files not needed at run time"
# Package indexes and caches (apt is not usable at run time: no network).
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* \
  "$root"/var/cache/debconf/*-old "$root"/var/lib/dpkg/*-old \
  "$root"/var/cache/ldconfig/aux-cache
# Logs of the build itself.
find "$root/var/log" -type f -exec rm -f {} +
# Test suites shipped inside Python packages (numpy/tests, pandas/tests,
# matplotlib/tests, IPython/*/tests, ...): never imported by user code.
# numpy.testing / pandas.testing / matplotlib.testing are separate and kept.
find "$root/usr/lib/python3/dist-packages" -depth -type d -name tests \
  -exec rm -rf {} +
# Anything left in /tmp.
find "$root/tmp" -mindepth 1 -delete
# Compiled bytecode (__pycache__/*.pyc) is deliberately KEPT: the kernel runs
# with a read-only root filesystem, so without it every kernel start would
# recompile numpy/pandas/matplotlib/IPython in memory (slower start).
echo "customize: done"
