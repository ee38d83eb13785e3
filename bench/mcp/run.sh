#!/usr/bin/env bash
# MCP tools/call throughput on ONE uvicorn worker, measured with wrk.
#
#   bench/mcp/run.sh [legacy|modern|all]     (default: all)
#   DURATION=10s CONNECTIONS=16 ROUNDS=1 LOG_LEVEL=INFO bench/mcp/run.sh legacy
#   TARGET=sdk bench/mcp/run.sh legacy         (the anchor: the bare SDK, bench/mcp/sdk_baseline.py)
#
# Starts `agentgate serve` (or the SDK baseline) on a free loopback port with a throw-away data dir,
# warms up, runs `wrk -t1 -c$CONNECTIONS -d$DURATION --latency`, prints req/s, p50/p99 and the
# server's CPU milliseconds per request (utime+stime from /proc/PID/stat), then stops the server it
# started. Needs wrk (apt-get install -y wrk). Only 127.0.0.1 is ever contacted. The machine is
# shared: compare runs taken side by side (ROUNDS=2 interleaves), and prefer the CPU figure.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN="$ROOT/.venv/bin"
WHICH=${1:-all}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
ROUNDS=${ROUNDS:-1}
LOG_LEVEL=${LOG_LEVEL:-INFO} # the default of Settings: one log line per tool call
TARGET=${TARGET:-agentgate}

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }
[ -x "$BIN/agentgate" ] || { echo "$BIN/agentgate is missing: run make (pip install -e '.[dev]')" >&2; exit 2; }

PORT=$("$BIN/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL="http://127.0.0.1:$PORT/api/mcp.php"
DATA=$(mktemp -d)

if [ "$TARGET" = sdk ]; then
  READY="$URL/ready" # GET on the SDK's endpoint would open an idle event stream
  "$BIN/uvicorn" --app-dir "$HERE" sdk_baseline:app --host 127.0.0.1 --port "$PORT" --log-level warning \
    --no-access-log >"$DATA/server.log" 2>&1 &
else
  READY="$URL" # agentgate answers GET with its manifest
  AGENTGATE_DATA_DIR="$DATA" AGENTGATE_LOG_LEVEL="$LOG_LEVEL" AGENTGATE_PUBLIC_BASE_URL="http://127.0.0.1:$PORT" \
    "$BIN/agentgate" serve --host 127.0.0.1 --port "$PORT" >"$DATA/server.log" 2>&1 &
fi
PID=$!

stop() {
  kill "$PID" 2>/dev/null || true
  wait "$PID" 2>/dev/null || true
  rm -rf "$DATA"
}
trap stop EXIT

for _ in $(seq 200); do
  curl -sf -m 2 -o /dev/null "$READY" && break
  kill -0 "$PID" 2>/dev/null || { cat "$DATA/server.log" >&2; exit 1; }
  sleep 0.1
done
curl -sf -m 2 -o /dev/null "$READY" || { echo "server did not start" >&2; cat "$DATA/server.log" >&2; exit 1; }

TICKS=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }

measure() {
  local label=$1 script=$2
  wrk -t1 -c"$CONNECTIONS" -d2s -s "$HERE/$script" "$URL" >/dev/null # warm-up
  local before after out line requests
  before=$(cpu_ticks)
  out=$(wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency -s "$HERE/$script" "$URL")
  after=$(cpu_ticks)
  line=$(grep '^RESULT' <<<"$out")
  requests=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$line")
  awk -v label="$label" -v line="$line" -v ticks=$((after - before)) -v hz="$TICKS" -v n="$requests" \
    -v loadavg="$(cut -d' ' -f1 /proc/loadavg)" 'BEGIN {
      split(line, f, " "); for (i in f) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
      printf "%-34s req/s=%7.1f  p50=%6.2fms  p99=%7.2fms  server_cpu=%.3f ms/req  errors=%d/%d/%d  loadavg=%s\n",
        label, v["rps"], v["p50_ms"], v["p99_ms"], (n > 0 ? ticks * 1000 / hz / n : 0),
        v["socket_errors"], v["non2xx"], v["bad"], loadavg
    }'
}

echo "$TARGET: MCP tools/call get_company_info, 1 worker, wrk -t1 -c$CONNECTIONS -d$DURATION (errors = socket/non-2xx/bad body)"
for round in $(seq "$ROUNDS"); do
  if [ "$WHICH" = legacy ] || [ "$WHICH" = all ]; then
    measure "round $round stateless JSON 2025-06-18" toolscall.lua
  fi
  if [ "$WHICH" = modern ] || [ "$WHICH" = all ]; then
    measure "round $round modern 2026-07-28" toolscall_modern.lua
  fi
done
