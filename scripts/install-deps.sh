#!/usr/bin/env bash
# install-deps.sh [runtime|test|--print-libraries|--print-trixie]: install the Debian packages glassroom needs.
#   runtime: bubblewrap and Debian's Python with ipykernel (and python-is-python3 and curl:
#            the local runtime's sandboxes see the host's /usr); the libraries generated code
#            expects (images/python/libraries.txt, as in the kernel image: numpy, pandas,
#            matplotlib, scipy, scikit-learn, ..., pip, and a CJK font; without recommends);
#            python3-debugpy (the kernel's debugger); ipywidgets 8 and its companions from
#            Debian trixie (images/python/trixie.txt, fetched by scripts/fetch-trixie-debs.sh
#            with an apt configuration of its own: trixie never becomes an apt source here),
#            replacing bookworm's ipywidgets 6 and jupyter-nbextension-jupyter-js-widgets;
#            the R kernel (R, IRkernel, ggplot2, dplyr, tidyr, readr, data.table; without
#            recommends: no compilers) and Deno for the JavaScript/TypeScript kernels
#            (scripts/install-deno.sh, from the npm registry: needs npm, installed if missing)
#   test:    runtime + docker.io, mmdebstrap (kernel image), chromium (UI tests), runsc (gVisor suite),
#            python3-websocket (docs' WebSocket client, Python SDK), python3-venv/-setuptools/-wheel (SDK pip install test),
#            python3-pip (pip install through the egress proxy),
#            nodejs + npm unless an npm is already on PATH (UI unit tests, MCP client tests),
#            python3-jupyter-server, python3-notebook, jupyter-core and jupyter-notebook
#            (/usr/bin/jupyter notebook: Jupyter gateway API tests with real clients)
# Installs only what is missing; needs root for that (prints what to install otherwise).
#   --print-libraries: print the packages of images/python/libraries.txt and exit.
#   --print-trixie: print the packages taken from trixie and their lowest versions
#            (images/python/trixie.txt) and exit.
set -euo pipefail
here=$(dirname "$0")
# The python3 kernel's libraries, one list for the image and this host.
mapfile -t libraries < <(sed -e 's/#.*//' "$here/../images/python/libraries.txt" | awk 'NF { print $2 }')
# The packages taken from trixie ("package lowest-version" lines).
mapfile -t trixie < <(sed -e 's/#.*//' "$here/../images/python/trixie.txt" | awk 'NF { print $1, $2 }')
if [ "${1:-}" = --print-libraries ]; then
  printf '%s\n' "${libraries[@]}"
  exit 0
fi
if [ "${1:-}" = --print-trixie ]; then
  printf '%s\n' "${trixie[@]}"
  exit 0
fi
from_trixie() { printf '%s\n' "${trixie[@]}" | awk -v p="$1" '$1 == p { f = 1 } END { exit !f }'; }
want=(bubblewrap python3-ipykernel python3-jupyter-client python3-debugpy util-linux python-is-python3 curl)
# The R kernel's packages and the Python libraries, installed without
# recommends (as in the kernel image); those trixie.txt lists come from
# trixie below, never from bookworm.
lean=(r-base-core r-cran-irkernel r-cran-ggplot2 r-cran-dplyr r-cran-tidyr r-cran-readr r-cran-data.table)
# The Java kernel: JShell is in the JDK (kernel/kernels/java.go).
lean+=(openjdk-17-jdk-headless)
for p in "${libraries[@]}"; do
  from_trixie "$p" || lean+=("$p")
done
# Deno is fetched with npm (scripts/install-deno.sh).
if [ ! -x /usr/local/bin/deno ] && ! command -v npm >/dev/null 2>&1; then
  want+=(nodejs npm)
fi
if [ "${1:-runtime}" = test ]; then
  want+=(docker.io cgroupfs-mount mmdebstrap chromium python3-websocket ca-certificates runsc)
  want+=(python3-venv python3-setuptools python3-wheel python3-pip)
  want+=(python3-jupyter-server python3-notebook jupyter-core jupyter-notebook)
  command -v npm >/dev/null 2>&1 || want+=(nodejs npm)
fi
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
missing=() missing_lean=() missing_trixie=()
for p in "${want[@]}"; do
  installed "$p" || missing+=("$p")
done
for p in "${lean[@]}"; do
  installed "$p" || missing_lean+=("$p")
done
# A trixie package is missing unless installed at its lowest version or
# later (bookworm's ipywidgets 6 is not enough).
for line in "${trixie[@]}"; do
  read -r p min <<<"$line"
  if ! installed "$p" || ! dpkg --compare-versions "$(dpkg-query -W -f='${Version}' "$p")" ge "$min"; then
    missing_trixie+=("$p>=$min")
  fi
done
# Bookworm's nbextension for ipywidgets 6: python3-widgetsnbextension 8
# Breaks it. Purged (not only removed), so that its nbconfig file goes too.
stale=()
if dpkg-query -W -f='${Status}' jupyter-nbextension-jupyter-js-widgets 2>/dev/null | grep -qv "not-installed"; then
  stale+=(jupyter-nbextension-jupyter-js-widgets)
fi
if [ ${#missing[@]} -ne 0 ] || [ ${#missing_lean[@]} -ne 0 ] || [ ${#missing_trixie[@]} -ne 0 ] || [ ${#stale[@]} -ne 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing Debian packages: ${missing[*]} ${missing_lean[*]}" >&2
    [ ${#missing_trixie[@]} -eq 0 ] || echo "install-deps: missing from trixie: ${missing_trixie[*]}" >&2
    [ ${#stale[@]} -eq 0 ] || echo "install-deps: to purge: ${stale[*]}" >&2
    echo "install-deps: run as root (sudo $0 ${1:-runtime})" >&2
    exit 1
  fi
  echo "install-deps: installing" ${missing[@]+"${missing[@]}"} ${missing_lean[@]+"${missing_lean[@]}"} \
    ${missing_trixie[@]+"${missing_trixie[@]}"} ${stale[@]+purging "${stale[@]}"}
  export DEBIAN_FRONTEND=noninteractive
  # apt-install.sh refreshes the lists (apt-get update) when a package has
  # no candidate or an install fails; fetch-trixie-debs.sh reads trixie
  # with lists of its own.
  # Trixie's packages first, so that bookworm's ipywidgets 6 is never
  # installed (python3-notebook recommends python3-ipywidgets). apt takes
  # their dependencies from bookworm and purges the stale nbextension in
  # the same transaction.
  if [ ${#missing_trixie[@]} -ne 0 ]; then
    debs=$(mktemp -d "${TMPDIR:-/tmp}/trixie-debs.XXXXXX")
    trap 'rm -rf "$debs"' EXIT
    chmod 0755 "$debs" # apt reads the files as _apt
    "$here/fetch-trixie-debs.sh" "$here/../images/python/trixie.txt" "$debs" >/dev/null
    "$here/apt-install.sh" --no-install-recommends --purge "$debs"/*.deb ${stale[@]+"${stale[@]/%/-}"}
    rm -rf "$debs"
    trap - EXIT
  elif [ ${#stale[@]} -ne 0 ]; then
    apt-get purge -y -q "${stale[@]}"
  fi
  # With recommends: that is the combination tested here (docker.io recommends
  # cgroupfs-mount, matplotlib its fonts and image libraries).
  if [ ${#missing[@]} -ne 0 ]; then
    "$here/apt-install.sh" "${missing[@]}"
  fi
  # R's recommends are compilers and dozens of CRAN packages: not needed.
  if [ ${#missing_lean[@]} -ne 0 ]; then
    "$here/apt-install.sh" --no-install-recommends "${missing_lean[@]}"
  fi
fi
# Keeps a Deno of its pinned version (without root only when it is there).
"$(dirname "$0")/install-deno.sh"
# matplotlib's font list for the local runtime (local.DefaultFontCache):
# each kernel start seeds its private matplotlib directory from it instead
# of scanning this machine's fonts again. Rebuilt every run (cheap), so it
# follows font and matplotlib upgrades.
if [ "$(id -u)" = 0 ]; then
  cache=/var/cache/glassroom/matplotlib
  mkdir -p "$cache" && chmod 0755 /var/cache/glassroom "$cache"
  rm -f "$cache"/fontlist-v*.json
  if ! MPLCONFIGDIR="$cache" /usr/bin/python3 -I -c 'import matplotlib.font_manager' >/dev/null 2>&1; then
    echo "install-deps: could not build matplotlib's font list in $cache (kernels will build their own)" >&2
  fi
  chmod -R a+rX "$cache"
fi
