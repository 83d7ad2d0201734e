#!/usr/bin/env bash
# Side-by-side benchmark: Restate 1.7.12 + a Node Counter virtual object (see README.md).
# Usage: bash benchmarks/restate/run.sh [driver args, e.g. --only a --calls 200]
# Starts restate-server on a throwaway data dir under /tmp and the Counter service, registers the
# deployment, runs driver.mjs, prints load averages and a Markdown table, and stops everything it
# started on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

INGRESS_PORT=8080 ADMIN_PORT=9070 NODE_PORT=5122 SERVICE_PORT=9080

if [[ ! -d node_modules/@restatedev/restate-sdk || ! -d node_modules/@restatedev/restate-server ]]; then
  echo "== installing pinned dependencies (npm ci)"
  npm ci --no-audit --no-fund
fi
# Run the platform binary directly (not the npm wrapper) so the PID we kill is the server itself.
SERVER_BIN=$(node -p 'require.resolve(`@restatedev/restate-server-${process.platform}-${process.arch}/bin/restate-server`)')
echo "== $("$SERVER_BIN" --version), sdk $(node -p 'require("@restatedev/restate-sdk/package.json").version'), node $(node --version)"

for p in $INGRESS_PORT $ADMIN_PORT $NODE_PORT $SERVICE_PORT; do
  if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
    echo "port $p is already in use; stop whatever holds it first" >&2
    exit 1
  fi
done

DATA_DIR=$(mktemp -d /tmp/restate-bench.XXXXXX)
SERVER_PID="" SERVICE_PID="" DRIVER_PID="" TAIL_PID="" OK=0
cleanup() {
  set +e
  for pid in $DRIVER_PID $TAIL_PID $SERVICE_PID $SERVER_PID; do
    kill -TERM "$pid" 2>/dev/null
  done
  for pid in $DRIVER_PID $TAIL_PID $SERVICE_PID $SERVER_PID; do
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  if [[ $OK != 1 ]]; then
    echo "== failed; last lines of the logs in $DATA_DIR:" >&2
    tail -n 20 "$DATA_DIR/server.log" "$DATA_DIR/service.log" >&2 2>/dev/null
  else
    rm -rf "$DATA_DIR"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }

echo "== load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

echo "== starting restate-server (data dir $DATA_DIR)"
t0=$(now)
"$SERVER_BIN" --no-logo --base-dir "$DATA_DIR" --node-name bench-node >"$DATA_DIR/server.log" 2>&1 &
SERVER_PID=$!
for i in $(seq 1 600); do
  if curl -sf "http://localhost:$ADMIN_PORT/health" >/dev/null && curl -sf "http://localhost:$INGRESS_PORT/restate/health" >/dev/null; then
    break
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "restate-server exited" >&2; exit 1; }
  [[ $i == 600 ]] && { echo "restate-server not healthy after 60 s" >&2; exit 1; }
  sleep 0.1
done
echo "   healthy after $(since "$t0") s"

echo "== starting Counter service on :$SERVICE_PORT"
# RESTATE_LOGGING=WARN: the SDK otherwise logs two INFO lines per invocation to stdout.
PORT=$SERVICE_PORT RESTATE_LOGGING=WARN node service.js >"$DATA_DIR/service.log" 2>&1 &
SERVICE_PID=$!

echo "== registering deployment http://localhost:$SERVICE_PORT"
t1=$(now)
for i in $(seq 1 300); do
  code=$(curl -s -o "$DATA_DIR/register.json" -w '%{http_code}' -X POST "http://localhost:$ADMIN_PORT/deployments" \
    -H 'content-type: application/json' -d "{\"uri\":\"http://localhost:$SERVICE_PORT\"}" || true)
  [[ $code == 200 || $code == 201 ]] && break
  kill -0 "$SERVICE_PID" 2>/dev/null || { echo "service exited" >&2; exit 1; }
  [[ $i == 300 ]] && { echo "registration failed (HTTP $code): $(cat "$DATA_DIR/register.json")" >&2; exit 1; }
  sleep 0.1
done
# The ingress learns about the new deployment asynchronously: wait until a call goes through.
for i in $(seq 1 300); do
  if curl -sf -X POST "http://localhost:$INGRESS_PORT/Counter/ready-probe/get" -H 'content-type: application/json' >/dev/null; then
    break
  fi
  [[ $i == 300 ]] && { echo "ingress never accepted Counter calls" >&2; exit 1; }
  sleep 0.1
done
echo "   registered and callable after $(since "$t1") s"

echo "== running driver"
DRIVER_OUT="$DATA_DIR/driver.out"
# In the background + wait, so a SIGTERM/SIGINT to this script runs the trap at once.
node driver.mjs --ingress "http://localhost:$INGRESS_PORT" "$@" >"$DRIVER_OUT" 2>&1 &
DRIVER_PID=$!
tail -n +1 -f --pid="$DRIVER_PID" "$DRIVER_OUT" &
TAIL_PID=$!
wait "$DRIVER_PID" || { rc=$?; wait "$TAIL_PID"; echo "driver failed (exit $rc)" >&2; exit "$rc"; }
DRIVER_PID=""
wait "$TAIL_PID"; TAIL_PID=""
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)
echo "== load average after: $LOAD_AFTER"

echo
echo "## Restate $("$SERVER_BIN" --version | awk '{print $2}') Counter benchmark ($(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ))"
echo
sed -n '/^| row |/,$p' "$DRIVER_OUT"
echo
echo "Load average (1/5/15 min): before $LOAD_BEFORE, after $LOAD_AFTER"
OK=1
