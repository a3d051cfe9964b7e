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

echo "customize: sandbox user (uid/gid 1000), /home/user and /workspace"
for db in passwd group shadow gshadow; do
  [ -f "$root/etc/$db" ] || continue
  while IFS= read -r line; do
    name=${line%%:*}
    grep -q "^$name:" "$root/etc/$db" || printf '%s\n' "$line" >>"$root/etc/$db"
  done <"$ctx/users/$db"
done
# /home/user is the workspace (the kernels' working directory and HOME,
# sandbox.WorkDir) and /workspace its alias: the runtimes bind the session's
# workspace on both. The directories exist in the image so that the mounts
# need no mount point created at run time (the root is read-only).
for d in /home/user /workspace; do
  mkdir -p "$root$d"
  chown 1000:1000 "$root$d"
  chmod 0755 "$root$d"
done

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
# Kept: the few files in a tests/ directory that library code imports at run
# time (numpy 2's numpy.testing, which scikit-learn and statsmodels import,
# imports numpy._core.tests._natype), with their bytecode.
dist="$root/usr/lib/python3/dist-packages"
kept=$(mktemp -d)
for f in numpy/_core/tests/__init__ numpy/_core/tests/_natype; do
  d=$(dirname "$f") n=$(basename "$f")
  for g in "$dist/$f.py" "$dist/$d/__pycache__/$n".*.pyc; do
    [ -f "$g" ] || continue
    mkdir -p "$kept/${g#"$dist"/}" && rmdir "$kept/${g#"$dist"/}"
    cp -p "$g" "$kept/${g#"$dist"/}"
  done
done
find "$dist" -depth -type d -name tests -exec rm -rf {} +
(cd "$kept" && find . -type f) | while IFS= read -r f; do
  mkdir -p "$(dirname "$dist/${f#./}")"
  cp -p "$kept/$f" "$dist/${f#./}"
done
rm -rf "$kept"
# R: the packages' HTML help, vignettes, test suites, C/C++ headers (there
# is no compiler in the image) and message translations (as for the rest of
# the image, only English); the help database (help/, which ?topic reads) is
# kept. Then R's own manuals and translations.
for lib in "$root"/usr/lib/R/library "$root"/usr/lib/R/site-library; do
  [ -d "$lib" ] || continue
  find "$lib" -mindepth 2 -maxdepth 2 -type d \( -name html -o -name doc -o -name tests \
    -o -name tinytest -o -name include -o -name po \) -exec rm -rf {} +
done
if [ -d "$root/usr/lib/R/library/translations" ]; then
  find "$root/usr/lib/R/library/translations" -mindepth 1 -maxdepth 1 -type d \
    -exec test -d {}/LC_MESSAGES \; -exec rm -rf {} +
fi
rm -rf "$root"/usr/share/R/doc/manual "$root"/usr/share/R/doc/html
# Anything left in /tmp, but mmdebstrap's own files: it keeps its apt
# configuration there (MMDEBSTRAP_APT_CONFIG, "Dir" = the new root) and runs
# apt-get update and clean with it after this hook. Without that file apt
# falls back to the host's configuration and empties the HOST's package
# lists and cache. mmdebstrap empties /tmp itself at the very end.
find "$root/tmp" -mindepth 1 -maxdepth 1 ! -name 'mmdebstrap.*' -exec rm -rf {} +
# Compiled bytecode (__pycache__/*.pyc) is deliberately KEPT: the kernel runs
# with a read-only root filesystem, so without it every kernel start would
# recompile numpy/pandas/matplotlib/IPython in memory (slower start).
echo "customize: kernels"
mkdir -p "$root/etc/glassroom"
# The kernel registry's probes (`glassroom kernels`, which build.sh passes);
# kernels.sh, the same probes in sh, where there is no binary (Dockerfile).
if [ -n "${GLASSROOM_BIN:-}" ]; then
  "$GLASSROOM_BIN" kernels --root "$root" >"$root/etc/glassroom/kernels"
else
  sh "$ctx/kernels.sh" "$root" >"$root/etc/glassroom/kernels"
fi
chmod 0644 "$root/etc/glassroom/kernels"
echo "customize: kernels: $(cat "$root/etc/glassroom/kernels")"
echo "customize: done"
