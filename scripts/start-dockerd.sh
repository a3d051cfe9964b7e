#!/usr/bin/env bash
# start-dockerd.sh: make sure a Docker engine is running on this machine.
#
# Idempotent: if `docker info` already works, it only makes sure the
# engine's runsc enforces seccomp profiles (below) and exits 0. Otherwise it
# starts dockerd in the background (there is no systemd here), logging to
# /var/log/dockerd.log, and waits up to DOCKERD_WAIT seconds (default 60) for
# `docker info` to succeed. Fails loudly (non-zero exit, tail of the log) if
# it doesn't.
#
# A new /etc/docker/daemon.json turns live-restore on (kernels survive an
# engine restart).
#
# If Debian's gVisor binary `runsc` is installed, it is registered as the
# Docker runtime "runsc" (runtimeArgs --network=none --host-uds=all
# --oci-seccomp) in /etc/docker/daemon.json. Without --oci-seccomp runsc
# ignores the containers' seccomp profile (glassroom refuses such a
# runsc), so an existing "runsc" entry that lacks it is given it, even
# when the engine already runs: the engine then reloads its config
# (SIGHUP; running containers are not touched), and the script checks in
# `docker info` that the flag took. Nothing is registered when runsc is
# absent.
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

# ---- gVisor runtime ---------------------------------------------------------------
# register_runsc makes $DAEMON_JSON register runsc as the runtime "runsc"
# with --oci-seccomp (adding the entry, or the flag to an existing entry;
# other settings and flags are kept). It prints "changed" when it wrote
# the file. Idempotent.
register_runsc() {
  local runsc=$1 py
  py=$(command -v python3 2>/dev/null || true)
  if [ -z "$py" ]; then
    say "WARNING: python3 is missing; cannot register runsc in $DAEMON_JSON"
    return 0
  fi
  mkdir -p "$(dirname "$DAEMON_JSON")"
  "$py" - "$DAEMON_JSON" "$runsc" <<'EOF'
import json, os, sys
path, runsc = sys.argv[1], sys.argv[2]
cfg = {}
if os.path.exists(path) and os.path.getsize(path) > 0:
    with open(path) as f:
        cfg = json.load(f)
runtimes = cfg.setdefault("runtimes", {})
entry = runtimes.get("runsc")
if entry is None:
    entry = runtimes["runsc"] = {"path": runsc, "runtimeArgs": ["--network=none", "--host-uds=all"]}
if "runtimeType" in entry:
    sys.exit("runtime runsc is a containerd shim (runtimeType); put oci-seccomp in its runsc config instead")
args = entry.get("runtimeArgs", [])
# --oci-seccomp makes the sentry apply the container's seccomp profile;
# any other spelling of the flag (--oci-seccomp=false) goes first.
want = [a for a in args if a.lstrip("-").split("=", 1)[0] != "oci-seccomp"] + ["--oci-seccomp"]
if args == want:
    sys.exit(0)
entry["runtimeArgs"] = want
tmp = path + ".tmp"
with open(tmp, "w") as f:
    json.dump(cfg, f, indent=2)
    f.write("\n")
if os.path.exists(path):
    os.chmod(tmp, os.stat(path).st_mode & 0o7777)
os.replace(tmp, path)
print("changed")
EOF
}

# runsc_enforces_seccomp: the running engine's runsc has --oci-seccomp.
runsc_enforces_seccomp() {
  docker info --format '{{with index .Runtimes "runsc"}}{{range .Args}}{{.}} {{end}}{{end}}' 2>/dev/null |
    tr ' ' '\n' | grep -qx -- '--oci-seccomp'
}

RUNSC=$(command -v runsc 2>/dev/null || true)

if docker info >/dev/null 2>&1; then
  say "docker engine already running"
  if [ -n "$RUNSC" ] && ! runsc_enforces_seccomp; then
    [ "$(id -u)" = 0 ] || die "the engine's runsc lacks --oci-seccomp (it would ignore seccomp profiles); run this script as root to fix it"
    if [ "$(register_runsc "$RUNSC")" = changed ]; then
      say "registered runsc with --oci-seccomp in $DAEMON_JSON"
    fi
    PID=$(cat "$PIDFILE" 2>/dev/null || true)
    if [ -z "$PID" ] || ! kill -0 "$PID" 2>/dev/null; then
      PID=$(pidof dockerd 2>/dev/null || true)
    fi
    case "$PID" in
      "" | *" "*) die "cannot tell which dockerd to reload (pid file $PIDFILE; dockerd pids: ${PID:-none}); reload it with kill -HUP" ;;
    esac
    say "reloading dockerd (pid $PID) for the runsc runtime's flags"
    kill -HUP "$PID"
    for ((i = 0; i < WAIT * 10; i++)); do
      runsc_enforces_seccomp && break
      sleep 0.1
    done
    runsc_enforces_seccomp || die "dockerd (pid $PID) did not take --oci-seccomp for runsc from $DAEMON_JSON (does it read that file? see its log, $LOG)"
    say "runsc enforces seccomp profiles (--oci-seccomp)"
  fi
  exit 0
fi

[ "$(id -u)" = 0 ] || die "must run as root to start dockerd"
command -v dockerd >/dev/null 2>&1 || die "dockerd not found; install it with: apt-get install -y docker.io"
command -v docker >/dev/null 2>&1 || die "docker CLI not found; install it with: apt-get install -y docker.io"

# ---- engine config -------------------------------------------------------------
# A new config turns live-restore on: containers (kernels) keep running while
# the engine restarts (an upgrade of docker.io), and glassroom's sessions
# keep their variables. An existing config is left as it is, but for the
# runsc entry.
mkdir -p "$(dirname "$DAEMON_JSON")"
if [ ! -s "$DAEMON_JSON" ]; then
  say "writing $DAEMON_JSON with live-restore on"
  printf '{\n  "live-restore": true\n}\n' >"$DAEMON_JSON"
fi
if [ -n "$RUNSC" ] && [ "$(register_runsc "$RUNSC")" = changed ]; then
  say "registered gVisor runtime runsc ($RUNSC, --oci-seccomp) in $DAEMON_JSON"
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
