#!/bin/sh
# kernels.sh ROOT
# Prints, comma-separated on one line, the kernels (sandbox.Kernels' names)
# the root filesystem at ROOT can run, the default (python3) first:
#   python3     python3 with ipykernel
#   r           R with IRkernel
#   javascript  Deno (deno jupyter --kernel), at /usr/local/bin/deno
#   typescript  the same Deno
#   bash        bash, with python3 and ipykernel (glassroom's bash kernel is
#               a Python kernel that drives bash)
#   java        the JDK 17 (JShell), with python3 and ipykernel (the java
#               kernel is a Python kernel that drives a JVM)
# These are the kernel registry's probes (kernel/kernels/*.go, Probe);
# TestKernelsScriptMatchesRegistry checks the two agree.
# customize.sh writes the list to ROOT/etc/glassroom/kernels, and build.sh
# puts it in the image's io.glassroom.kernels label, which the Docker runtime
# reads (an image without the label holds python3 only). It looks at files
# only (no chroot); build.sh runs each listed kernel's interpreter in the
# finished image before it tags it.
set -eu
root=${1:?usage: kernels.sh ROOT}
root=${root%/}

# has PATH: the file exists inside ROOT (the image's links are relative:
# python3 -> python3.11, merged /usr's bin -> usr/bin).
has() { [ -e "$root$1" ]; }

kernels=
add() { kernels=${kernels:+$kernels,}$1; }

python=false
if has /usr/bin/python3 && has /usr/lib/python3/dist-packages/ipykernel/__init__.py; then
  python=true
  add python3
fi
if has /usr/bin/R && has /usr/lib/R/site-library/IRkernel/DESCRIPTION; then
  add r
fi
if [ -x "$root/usr/local/bin/deno" ]; then
  add javascript
  add typescript
fi
if $python && has /bin/bash; then
  add bash
fi
if $python && ls "$root"/usr/lib/jvm/java-17-openjdk-*/bin/java >/dev/null 2>&1 &&
  ls "$root"/usr/lib/jvm/java-17-openjdk-*/bin/jshell >/dev/null 2>&1; then
  add java
fi
printf '%s\n' "$kernels"
