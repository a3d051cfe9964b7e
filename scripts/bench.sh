#!/usr/bin/env bash
# bench.sh: the load harness, side by side, on this machine: glassroom
# (local runtime with its fork server and without, and docker when an
# engine and the kernel image exist)
# against Debian's jupyter_server, same client code (glassroom bench),
# then the speed goals (glassroom bench --goals: first analysis cell,
# creation, idle memory, busy sessions) for the same three servers.
# glassroom runs with a warm pool of POOL kernels (preloading the analysis
# stack, the default). Everything listens on 127.0.0.1 only.
#   SESSIONS=10,40 DURATION=20s POOL=2 IDLE_SESSIONS=100 GOALS=1 LOAD=1 scripts/bench.sh
# (LOAD=0: the goals only.)
set -euo pipefail
cd "$(dirname "$0")/.."
SESSIONS=${SESSIONS:-10,40}
DURATION=${DURATION:-20s}
POOL=${POOL:-2}
IDLE_SESSIONS=${IDLE_SESSIONS:-100}
GOALS=${GOALS:-1}
LOAD=${LOAD:-1}
BIN=bin/glassroom
KEY=bench-key-$(openssl rand -hex 12 2>/dev/null || echo 0123456789abcdef)
TOKEN=bench-token-$(openssl rand -hex 12 2>/dev/null || echo 0123456789abcdef)
work=$(mktemp -d /tmp/glassroom-bench.XXXXXX)
chmod 711 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

start_glassroom() { # runtime port [flags...]
  local state="$work/state-$1-$2" rt=$1 port=$2
  shift 2
  mkdir -p "$state"
  "$BIN" serve --runtime "$rt" --listen "127.0.0.1:$port" --api-key "$KEY" --state-dir "$state" \
    --max-sessions 128 --max-sessions-per-key 128 --pool "$POOL" --instance "bench$port" --uid-base $((200000 + (port - 18860) * 1024)) \
    --log-level error "$@" >/dev/null &
  pids+=($!)
}
wait_http() { # url
  for _ in $(seq 1 100); do curl -fs "$1" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "bench: $1 did not come up" >&2; return 1
}

targets=()
start_glassroom local 18870
wait_http http://127.0.0.1:18870/healthz
targets+=("glassroom@forked=http://127.0.0.1:18870")
start_glassroom local 18872 --fork-server=false
wait_http http://127.0.0.1:18872/healthz
targets+=("glassroom@exec'd=http://127.0.0.1:18872")
if docker image inspect glassroom/python-kernel:latest >/dev/null 2>&1; then
  start_glassroom docker 18871
  wait_http http://127.0.0.1:18871/healthz
  targets+=("glassroom=http://127.0.0.1:18871")
fi
mkdir -p "$work/jupyter"
PATH=/usr/bin:/bin /usr/bin/python3 -m jupyter_server --no-browser --allow-root --ServerApp.ip=127.0.0.1 \
  --ServerApp.port=18889 --ServerApp.port_retries=0 --ServerApp.token="$TOKEN" --ServerApp.root_dir="$work/jupyter" \
  --ServerApp.log_level=ERROR >/dev/null 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:18889/api?token=$TOKEN"
targets+=("jupyter=http://127.0.0.1:18889")

export GLASSROOM_API_KEY=$KEY JUPYTER_TOKEN=$TOKEN
if [ "$LOAD" = 1 ]; then
  "$BIN" bench --sessions "$SESSIONS" --duration "$DURATION" "${targets[@]}"
fi
if [ "$GOALS" = 1 ]; then
  "$BIN" bench --goals --duration "$DURATION" --idle-sessions "$IDLE_SESSIONS" "${targets[@]}"
fi
