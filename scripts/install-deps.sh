#!/usr/bin/env bash
# install-deps.sh [runtime|test]: install the Debian packages glassroom needs.
#   runtime: bubblewrap and Debian's Python with ipykernel, numpy, pandas, matplotlib
#   test:    runtime + docker.io, mmdebstrap (kernel image), chromium (UI tests), runsc (gVisor suite),
#            python3-websocket (docs' WebSocket client, Python SDK), python3-venv/-setuptools/-wheel (SDK pip install test),
#            python3-pip (pip install through the egress proxy),
#            nodejs + npm unless an npm is already on PATH (UI unit tests, MCP client tests),
#            python3-jupyter-server, python3-notebook (Jupyter gateway API tests with real clients)
# Installs only what is missing; needs root for that (prints what to install otherwise).
set -euo pipefail
want=(bubblewrap python3-ipykernel python3-jupyter-client python3-matplotlib python3-numpy python3-pandas util-linux)
if [ "${1:-runtime}" = test ]; then
  want+=(docker.io cgroupfs-mount mmdebstrap chromium python3-websocket ca-certificates runsc)
  want+=(python3-venv python3-setuptools python3-wheel python3-pip)
  want+=(python3-jupyter-server python3-notebook)
  command -v npm >/dev/null 2>&1 || want+=(nodejs npm)
fi
missing=()
for p in "${want[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-deps: missing Debian packages: ${missing[*]}" >&2
  echo "install-deps: run as root, or: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# With recommends: that is the combination tested here (docker.io recommends
# cgroupfs-mount, matplotlib its fonts and image libraries).
apt-get install -y -q "${missing[@]}"
