#!/usr/bin/env bash
# stress.sh [-n COUNT] [-b BURNERS] [-t TIMEOUT] [PKG[:REGEX] ...]: the flake
# hunt. Runs each package's tests (those matching REGEX, or all) COUNT times
# (-count, default 5) with the race detector, beside BURNERS CPU-bound
# processes (default 4: on two cores, a loaded machine), and reports every
# test that failed at least once, with how often. Exits 1 if any did.
#
# Without packages it runs the tests that failed in CI this year (ONCE_FLAKY
# below). `make test-stress` runs it; STRESS_ARGS passes options, e.g.
#   make test-stress STRESS_ARGS="-n 2 ./mcp:TestRunCommand"
# Needs what `make test` sets up first (dependencies, Docker and the kernel
# image, Chromium, the test cluster) for the packages that use them.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
count=5 burners=4 timeout=60m
while getopts n:b:t: o; do
  case $o in
  n) count=$OPTARG ;;
  b) burners=$OPTARG ;;
  t) timeout=$OPTARG ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))

# Package:regex of every test that failed in CI this year (and the
# timeout tests of the interrupt path that was the cause of several).
ONCE_FLAKY=(
  "./gateway/jupyter:^TestJupyterTimeout$"
  "./gateway/jupyter:^TestJupyterAPI$/./^one_session_two_faces$"
  "./cmd/glassroom:^TestServeShutdownKillsKernels$"
  "./mcp:^TestRunCommand$"
  "./gateway:^(TestClientPauseFreezes|TestCommsAbuse)$"
  "./kernel/runtime/docker:^(TestBash|TestContexts)$"
  "./sessions:^(TestTimeout|TestTerminal)"
  "./web:^TestBrowserReadyOnOpen$"
)
[ $# -gt 0 ] || set -- "${ONCE_FLAKY[@]}"

pids=()
stop_burners() {
  for p in ${pids[@]+"${pids[@]}"}; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_burners EXIT
for _ in $(seq "$burners"); do
  sh -c 'while :; do :; done' &
  pids+=($!)
done

log=$(mktemp "${TMPDIR:-/tmp}/stress.XXXXXX.log")
echo "stress: ${count} runs of each, beside ${burners} CPU burners; log $log"
start=$(date +%s)
for spec in "$@"; do
  pkg=${spec%%:*} re=
  [ "$pkg" = "$spec" ] || re=${spec#*:}
  echo "stress: $pkg ${re:+-run '$re'}"
  # Each test's result line, "--- FAIL: Name" (subtests too), is what counts.
  "$GO" test -race -count="$count" -timeout "$timeout" -v ${re:+-run "$re"} "$pkg" >>"$log" 2>&1 || true
done
stop_burners
fails=$(grep -E '^\s*--- FAIL: ' "$log" | sed -E 's/^\s*--- FAIL: (\S+).*/\1/' | sort | uniq -c | sort -rn || true)
passes=$(grep -cE '^\s*--- PASS: ' "$log" || true)
echo "stress: $(( $(date +%s) - start )) s; $passes test results passed"
if [ -n "$fails" ] || grep -qE '^(FAIL|panic:)' "$log"; then
  echo "stress: tests that failed at least once (count name):"
  if [ -n "$fails" ]; then echo "$fails"; else grep -E '^(FAIL|panic:)' "$log" | sort | uniq -c; fi
  exit 1
fi
echo "stress: no test failed"
