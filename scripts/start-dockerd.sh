#!/usr/bin/env bash
# start-dockerd.sh: make sure a Docker engine is running on this machine.
#
# Idempotent: if `docker info` already works, exits 0 at once. Otherwise it
# starts dockerd in the background (there is no systemd here), logging to
# /var/log/dockerd.log, and waits up to DOCKERD_WAIT seconds (default 60) for
# `docker info` to succeed. Fails loudly (non-zero exit, tail of the log) if
# it doesn't.
#
# A new /etc/docker/daemon.json turns live-restore on (kernels survive an
# engine restart).
#
# If Debian's gVisor binary `runsc` is installed, it is registered as the
# Docker runtime "runsc" (runtimeArgs --network=none --host-uds=all) in
# /etc/docker/daemon.json. Nothing is registered when runsc is absent.
#
# Needs root and Debian's docker.io package (apt-get install -y docker.io).
#
# Env (defaults suit the normal case; the knobs exist mainly for tests that
# run a second, throwaway engine next to the real one):
#   DOCKERD_LOG=/var/log/dockerd.log        daemon log (appended)
#   DOCKERD_WAIT=60                         seconds to wait for the engine
#   DOCKERD_CONFIG=/etc/docker/daemon.json  daemon config file
#   DOCKERD_PIDFILE=/var/run/docker.pid
#   DOCKERD_EXTRA_ARGS=                     extra dockerd flags (word-split),
#                                           e.g. "-H unix:///tmp/d.sock
#                                           --data-root /tmp/d"; set
#                                           DOCKER_HOST to match.
set -euo pipefail

LOG=${DOCKERD_LOG:-/var/log/dockerd.log}
WAIT=${DOCKERD_WAIT:-60}
DAEMON_JSON=${DOCKERD_CONFIG:-/etc/docker/daemon.json}
PIDFILE=${DOCKERD_PIDFILE:-/var/run/docker.pid}

say() { echo "start-dockerd: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

if docker info >/dev/null 2>&1; then
  say "docker engine already running"
  exit 0
fi

[ "$(id -u)" = 0 ] || die "must run as root to start dockerd"
command -v dockerd >/dev/null 2>&1 || die "dockerd not found; install it with: apt-get install -y docker.io"
command -v docker >/dev/null 2>&1 || die "docker CLI not found; install it with: apt-get install -y docker.io"

# ---- engine config -------------------------------------------------------------
# A new config turns live-restore on: containers (kernels) keep running while
# the engine restarts (an upgrade of docker.io), and glassroom's sessions
# keep their variables. An existing config is left as it is.
mkdir -p "$(dirname "$DAEMON_JSON")"
if [ ! -s "$DAEMON_JSON" ]; then
  say "writing $DAEMON_JSON with live-restore on"
  printf '{\n  "live-restore": true\n}\n' >"$DAEMON_JSON"
fi

# ---- optional gVisor runtime -------------------------------------------------
RUNSC=$(command -v runsc 2>/dev/null || true)
if [ -n "$RUNSC" ]; then
  mkdir -p "$(dirname "$DAEMON_JSON")"
  if [ ! -s "$DAEMON_JSON" ]; then
    say "registering gVisor runtime runsc ($RUNSC) in $DAEMON_JSON"
    cat >"$DAEMON_JSON" <<EOF
{
  "runtimes": {
    "runsc": {
      "path": "$RUNSC",
      "runtimeArgs": ["--network=none", "--host-uds=all"]
    }
  }
}
EOF
  elif ! grep -q '"runsc"' "$DAEMON_JSON"; then
    # Merge into an existing config without clobbering other settings.
    PY=$(command -v python3 2>/dev/null || true)
    if [ -n "$PY" ]; then
      say "adding gVisor runtime runsc ($RUNSC) to existing $DAEMON_JSON"
      cp "$DAEMON_JSON" "$DAEMON_JSON.bak"
      "$PY" - "$DAEMON_JSON" "$RUNSC" <<'EOF'
import json, sys
path, runsc = sys.argv[1], sys.argv[2]
with open(path) as f:
    cfg = json.load(f)
cfg.setdefault("runtimes", {})["runsc"] = {
    "path": runsc,
    "runtimeArgs": ["--network=none", "--host-uds=all"],
}
with open(path + ".tmp", "w") as f:
    json.dump(cfg, f, indent=2)
    f.write("\n")
import os
os.replace(path + ".tmp", path)
EOF
    else
      say "WARNING: $DAEMON_JSON exists and python3 is missing; not registering runsc"
    fi
  else
    say "runsc runtime already present in $DAEMON_JSON"
  fi
fi

# ---- cgroups ---------------------------------------------------------------------
# Without systemd nothing may have mounted the cgroup hierarchies dockerd needs.
if [ ! -e /sys/fs/cgroup/cgroup.controllers ] && ! mountpoint -q /sys/fs/cgroup/memory 2>/dev/null; then
  if command -v cgroupfs-mount >/dev/null 2>&1; then
    say "mounting cgroup hierarchies (cgroupfs-mount)"
    cgroupfs-mount || say "WARNING: cgroupfs-mount failed"
  fi
fi

# ---- start dockerd -------------------------------------------------------------
ARGS=(--pidfile "$PIDFILE")
[ -f "$DAEMON_JSON" ] && ARGS+=(--config-file "$DAEMON_JSON")
# overlay2 works on this host; don't pass it twice if daemon.json sets a driver
# (dockerd refuses to start when a flag and daemon.json both set an option).
if ! { [ -f "$DAEMON_JSON" ] && grep -q '"storage-driver"' "$DAEMON_JSON"; }; then
  ARGS+=(--storage-driver=overlay2)
fi
# shellcheck disable=SC2206 # word splitting wanted
ARGS+=(${DOCKERD_EXTRA_ARGS:-})

PID=$(cat "$PIDFILE" 2>/dev/null || true)
if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
  say "dockerd (pid $PID) is running but not answering yet; waiting for it"
else
  # A stale pid file from a killed daemon makes dockerd refuse to start.
  rm -f "$PIDFILE"
  mkdir -p "$(dirname "$LOG")"
  say "starting dockerd ${ARGS[*]} (log: $LOG)"
  # setsid + nohup: detach from this shell so the daemon outlives the script.
  setsid nohup dockerd "${ARGS[@]}" >>"$LOG" 2>&1 </dev/null &
  PID=$!
  say "dockerd pid $PID"
fi

for ((i = 0; i < WAIT; i++)); do
  if docker info >/dev/null 2>&1; then
    say "docker engine ready after ${i}s ($(docker info --format '{{.ServerVersion}} {{.Driver}} cgroup{{.CgroupVersion}}' 2>/dev/null || true))"
    exit 0
  fi
  # (setsid may fork, so also accept the pid dockerd wrote to its pid file)
  if ! kill -0 "$PID" 2>/dev/null && ! kill -0 "$(cat "$PIDFILE" 2>/dev/null || echo none)" 2>/dev/null; then
    say "ERROR: dockerd (pid $PID) exited; last lines of $LOG:"
    tail -n 40 "$LOG" >&2 || true
    exit 1
  fi
  sleep 1
done

say "ERROR: docker engine did not become ready within ${WAIT}s; last lines of $LOG:"
tail -n 40 "$LOG" >&2 || true
exit 1
