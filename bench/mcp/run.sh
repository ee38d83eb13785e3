#!/usr/bin/env bash
# MCP tools/call throughput on ONE uvicorn worker, side by side, measured with wrk.
#
#   bench/mcp/run.sh [legacy|modern|all]     (default: all; targets: the bare SDK, then agentgate)
#   TARGETS="sdk agentgate nofast" ROUNDS=2 bench/mcp/run.sh legacy
#   DURATION=10s CONNECTIONS=16 LOG_LEVEL=INFO bench/mcp/run.sh
#
# Targets: sdk (the bare SDK app of sdk_baseline.py), agentgate (`agentgate serve`, fast path on, the
# default) and nofast (agentgate with AGENTGATE_MCP_FAST_PATH=false: every request through the SDK).
# For each round and target it starts a fresh server on a free loopback port with a throw-away data
# dir, warms up for 2 s, runs `wrk -t1 -c$CONNECTIONS -d$DURATION --latency`, prints req/s, p50/p99
# and the server's CPU milliseconds per request (utime+stime from /proc/PID/stat), stops the server
# it started, and ends with a table: mean req/s per target and the ratio to the SDK. Needs wrk
# (apt-get install -y wrk). Only 127.0.0.1 is contacted. The machine is shared: compare runs taken
# side by side (ROUNDS=2 interleaves the targets), and prefer the CPU figure.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
BIN="$ROOT/.venv/bin"
WHICH=${1:-all}
DURATION=${DURATION:-10s}
CONNECTIONS=${CONNECTIONS:-16}
ROUNDS=${ROUNDS:-1}
LOG_LEVEL=${LOG_LEVEL:-INFO} # the default of Settings (a tool call is counted; only failures are logged)
TARGETS=${TARGETS:-${TARGET:-sdk agentgate}}

command -v wrk >/dev/null || { echo "wrk is missing: apt-get install -y wrk" >&2; exit 2; }
[ -x "$BIN/agentgate" ] || { echo "$BIN/agentgate is missing: run make (pip install -e '.[dev]')" >&2; exit 2; }

RESULTS=$(mktemp)
PID=""
DATA=""

start_server() {
  local target=$1
  PORT=$("$BIN/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  URL="http://127.0.0.1:$PORT/api/mcp.php"
  DATA=$(mktemp -d)
  if [ "$target" = sdk ]; then
    READY="$URL/ready" # GET on the SDK's endpoint would open an idle event stream
    "$BIN/uvicorn" --app-dir "$HERE" sdk_baseline:app --host 127.0.0.1 --port "$PORT" --log-level warning \
      --no-access-log >"$DATA/server.log" 2>&1 &
  else
    READY="$URL" # agentgate answers GET with its manifest
    AGENTGATE_DATA_DIR="$DATA" AGENTGATE_LOG_LEVEL="$LOG_LEVEL" AGENTGATE_PUBLIC_BASE_URL="http://127.0.0.1:$PORT" \
      AGENTGATE_MCP_FAST_PATH=$([ "$target" = nofast ] && echo false || echo true) \
      "$BIN/agentgate" serve --host 127.0.0.1 --port "$PORT" >"$DATA/server.log" 2>&1 &
  fi
  PID=$!
  for _ in $(seq 200); do
    curl -sf -m 2 -o /dev/null "$READY" && return 0
    kill -0 "$PID" 2>/dev/null || { cat "$DATA/server.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$target did not start" >&2
  cat "$DATA/server.log" >&2
  exit 1
}

stop_server() {
  if [ -n "$PID" ]; then
    kill "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
  fi
  [ -n "$DATA" ] && rm -rf "$DATA"
  PID="" DATA=""
}
trap 'stop_server; rm -f "$RESULTS"' EXIT

TICKS=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }

measure() {
  local target=$1 mode=$2 script=$3
  wrk -t1 -c"$CONNECTIONS" -d2s -s "$HERE/$script" "$URL" >/dev/null # warm-up
  local before after out line requests
  before=$(cpu_ticks)
  out=$(wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency -s "$HERE/$script" "$URL")
  after=$(cpu_ticks)
  line=$(grep '^RESULT' <<<"$out")
  requests=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$line")
  awk -v target="$target" -v mode="$mode" -v line="$line" -v ticks=$((after - before)) -v hz="$TICKS" \
    -v n="$requests" -v loadavg="$(cut -d' ' -f1 /proc/loadavg)" -v results="$RESULTS" 'BEGIN {
      split(line, f, " "); for (i in f) { split(f[i], kv, "="); v[kv[1]] = kv[2] }
      cpu = (n > 0 ? ticks * 1000 / hz / n : 0)
      printf "%-10s %-26s req/s=%7.1f  p50=%6.2fms  p99=%7.2fms  server_cpu=%.3f ms/req  errors=%d/%d/%d  loadavg=%s\n",
        target, mode, v["rps"], v["p50_ms"], v["p99_ms"], cpu, v["socket_errors"], v["non2xx"], v["bad"], loadavg
      printf "%s %s %s %s %s %s\n", target, mode, v["rps"], v["p50_ms"], v["p99_ms"], cpu >> results
    }'
}

echo "MCP tools/call get_company_info, 1 worker, wrk -t1 -c$CONNECTIONS -d$DURATION (errors = socket/non-2xx/bad body)"
for round in $(seq "$ROUNDS"); do
  for target in $TARGETS; do
    start_server "$target"
    if [ "$WHICH" = legacy ] || [ "$WHICH" = all ]; then
      measure "$target" "2025-06-18-stateless-JSON" toolscall.lua
    fi
    if [ "$WHICH" = modern ] || [ "$WHICH" = all ]; then
      measure "$target" "2026-07-28" toolscall_modern.lua
    fi
    stop_server
  done
done

echo
echo "Mean over $ROUNDS round(s); ratio = req/s over the bare SDK's in the same protocol:"
echo "| protocol | server | req/s | p50 ms | p99 ms | server CPU ms/req | vs SDK |"
echo "|---|---|---|---|---|---|---|"
awk '{ key = $2 SUBSEP $1; n[key]++; rps[key] += $3; p50[key] += $4; p99[key] += $5; cpu[key] += $6; modes[$2] = 1; targets[$1] = 1 }
  END {
    for (m in modes) for (t in targets) {
      key = m SUBSEP t; if (!(key in n)) continue
      base = (m SUBSEP "sdk") in n ? rps[m SUBSEP "sdk"] / n[m SUBSEP "sdk"] : 0
      r = rps[key] / n[key]
      printf "| %s | %s | %.0f | %.2f | %.2f | %.3f | %s |\n", m, t, r, p50[key] / n[key], p99[key] / n[key],
        cpu[key] / n[key], (base > 0 ? sprintf("%.2fx", r / base) : "-")
    }
  }' "$RESULTS" | sort
