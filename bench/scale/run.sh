#!/usr/bin/env bash
# Throughput of agentgate scaled out: `agentgate serve --workers 2` on PostgreSQL and Redis against
# the single-process embedded default (SQLite, in-process state), with the shared bench-kit (not a test).
#
#   bench/scale/run.sh
#
# For each configuration in CONFIGS (default "embedded-w1 pgredis-w1 pgredis-w2"):
#   embedded-w1  agentgate serve --workers 1, SQLite in a temp data dir, no Redis
#   pgredis-wN   agentgate serve --workers N, a fresh PostgreSQL database (created from
#                AGENTGATE_BENCH_POSTGRES_URL, dropped afterwards) and a private redis-server on
#                127.0.0.1:${REDIS_PORT:-16379} (no persistence), production secrets shared via env
# it makes an enterprise tenant and a live key with the CLI and runs ../shared/bench-kit/run.sh
# (the kit's mock upstream on 127.0.0.1:18000, wrk). Then it prints requests/s and requests/s per
# worker of every configuration side by side.
# Knobs: the kit's (CONCURRENCY default 64, DURATION 10, WARMUP 2, MODES nonstream,stream; TTFT and
# the SDK preflight are off unless TTFT_CONC / NO_SDK are set), CONFIGS, PORT (18081), REDIS_PORT.
# Results: ${GWBENCH_WORK:-/tmp/gwbench}/results/<timestamp>-scale-<config>/results.{md,json}
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KIT="$ROOT/../shared/bench-kit"
if [ ! -x "$KIT/run.sh" ] || [ ! -x "$KIT/upstream.sh" ]; then
  echo "error: the bench kit is missing: expected ../shared/bench-kit (from the repo root: $KIT)." >&2
  exit 2
fi
case "${1:-}" in -h|--help) sed -n '2,19p' "$0"; exit 0 ;; esac

VENV="${AGENTGATE_VENV:-$ROOT/.venv}"
PORT="${PORT:-18081}"
UPSTREAM_PORT="${UPSTREAM_PORT:-18000}"
REDIS_PORT="${REDIS_PORT:-16379}"
PG_ADMIN_URL="${AGENTGATE_BENCH_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}"
MODEL="${MODEL:-gpt-4o-mini}"
CONFIGS="${CONFIGS:-embedded-w1 pgredis-w1 pgredis-w2}"
export GWBENCH_WORK="${GWBENCH_WORK:-${TMPDIR:-/tmp}/gwbench}"
export CONCURRENCY="${CONCURRENCY:-64}" DURATION="${DURATION:-10}" WARMUP="${WARMUP:-2}"
export MODES="${MODES:-nonstream,stream}" TTFT_CONC="${TTFT_CONC-}" NO_SDK="${NO_SDK-1}"
STAMP="$(date +%Y%m%d-%H%M%S)"
GW_PID=""; REDIS_PID=""; DB_NAME=""; DATA=""; UP_STARTED=0; OUTS=()

pg() {  # run one statement on the admin database
  "$VENV/bin/python" - "$PG_ADMIN_URL" "$1" <<'PY'
import sys, psycopg
with psycopg.connect(sys.argv[1], autocommit=True, connect_timeout=3) as conn:
    conn.execute(sys.argv[2])
PY
}

stop_config() {
  if [ -n "$GW_PID" ] && kill -0 "$GW_PID" 2>/dev/null; then
    kill -TERM "$GW_PID" 2>/dev/null || true
    for _ in $(seq 1 60); do kill -0 "$GW_PID" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$GW_PID" 2>/dev/null || true
  fi
  GW_PID=""
  if [ -n "$REDIS_PID" ]; then kill -TERM "$REDIS_PID" 2>/dev/null || true; wait "$REDIS_PID" 2>/dev/null || true; fi
  REDIS_PID=""
  if [ -n "$DB_NAME" ]; then pg "DROP DATABASE IF EXISTS \"$DB_NAME\" WITH (FORCE)" || true; fi
  DB_NAME=""
  [ -n "$DATA" ] && rm -rf "$DATA"
  DATA=""
}
cleanup() {
  stop_config
  [ "$UP_STARTED" = 1 ] && "$KIT/upstream.sh" stop "$UPSTREAM_PORT" >/dev/null || true
}
trap cleanup EXIT

if ! curl -fsS -o /dev/null "http://127.0.0.1:$UPSTREAM_PORT/health" 2>/dev/null; then
  "$KIT/upstream.sh" start "$UPSTREAM_PORT"; UP_STARTED=1
fi

run_config() {
  local config="$1" workers="${1##*-w}"
  DATA="$(mktemp -d "${TMPDIR:-/tmp}/agentgate-scale-bench.XXXXXX")"
  unset AGENTGATE_DATABASE_URL AGENTGATE_REDIS_URL AGENTGATE_ROUTES
  export AGENTGATE_MODE=production AGENTGATE_DATA_DIR="$DATA" AGENTGATE_LOG_LEVEL=WARNING
  export AGENTGATE_BILLING_ALLOW_SANDBOX_IN_PRODUCTION=true  # nothing is sold in a benchmark
  export AGENTGATE_PUBLIC_BASE_URL="http://127.0.0.1:$PORT"
  export AGENTGATE_UPSTREAMS="[{\"name\": \"bench\", \"base_url\": \"http://127.0.0.1:$UPSTREAM_PORT/v1\",
    \"api_key\": \"sk-mock-upstream\", \"models\": {\"$MODEL\": \"mock-gpt\"}}]"
  case "$config" in
    embedded-w1) ;;
    pgredis-w*)
      redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no >"$DATA/redis.log" 2>&1 &
      REDIS_PID=$!
      DB_NAME="agentgate_bench_$(date +%s)_$$"
      pg "CREATE DATABASE \"$DB_NAME\""
      export AGENTGATE_DATABASE_URL="${PG_ADMIN_URL%/*}/$DB_NAME"
      export AGENTGATE_REDIS_URL="redis://127.0.0.1:$REDIS_PORT/0"
      # Production on a shared database needs the shared secrets (docs/deployment.md).
      export AGENTGATE_JWT_SECRET="$("$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(48))')"
      export AGENTGATE_CHAT_TOKEN_SECRET="$("$VENV/bin/python" -c 'import secrets; print(secrets.token_urlsafe(48))')"
      export AGENTGATE_ENCRYPTION_KEY="$("$VENV/bin/python" -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
      ;;
    *) echo "unknown configuration: $config" >&2; exit 2 ;;
  esac
  "$VENV/bin/agentgate" migrate >/dev/null
  "$VENV/bin/agentgate" tenants create --name bench-scale --plan enterprise --rate-limit 1000000000 >/dev/null
  KEY="$("$VENV/bin/agentgate" keys create --tenant bench-scale --scopes chat,models --name bench 2>/dev/null | tail -1)"
  case "$KEY" in sk_live_*) ;; *) echo "error: no live key created" >&2; exit 1 ;; esac

  "$VENV/bin/agentgate" serve --host 127.0.0.1 --port "$PORT" --workers "$workers" >"$DATA/gateway.log" 2>&1 &
  GW_PID=$!
  for _ in $(seq 1 200); do
    curl -fsS -o /dev/null "http://127.0.0.1:$PORT/health/ready" 2>/dev/null && break
    kill -0 "$GW_PID" 2>/dev/null || { echo "agentgate exited:" >&2; cat "$DATA/gateway.log" >&2; exit 1; }
    sleep 0.1
  done
  sleep 1  # every worker process up, not only the first to answer
  echo "== $config: agentgate pid $GW_PID, $workers worker(s), ${AGENTGATE_DATABASE_URL:-SQLite} ${AGENTGATE_REDIS_URL:-no Redis}"
  local out="$GWBENCH_WORK/results/$STAMP-scale-$config"
  LABEL="$config" GATEWAY_PIDS="$GW_PID" UPSTREAM_PORT="$UPSTREAM_PORT" OUT="$out" SKIP_DIRECT="${SKIP_DIRECT-1}" \
    "$KIT/run.sh" "http://127.0.0.1:$PORT/v1" "$KEY" "$MODEL" >"$DATA/bench.out" 2>&1 \
    || { cat "$DATA/bench.out" >&2; exit 1; }
  cp "$DATA/gateway.log" "$out/gateway.log"
  echo "   gateway log: $out/gateway.log ($(grep -c ERROR "$out/gateway.log" || true) ERROR lines)"
  OUTS+=("$config=$out")
  stop_config
}

for config in $CONFIGS; do run_config "$config"; done

"$VENV/bin/python" - "${OUTS[@]}" <<'PY'
import json, sys
print("\n| configuration | workers | mode | conc | req/s | req/s per worker | p50 ms | p99 ms | errors | gateway CPU ms/req |")
print("|---|---|---|---|---|---|---|---|---|---|")
for item in sys.argv[1:]:
    config, out = item.split("=", 1)
    workers = int(config.rsplit("-w", 1)[1])
    for run in json.load(open(f"{out}/results.json"))["runs"]:
        if run["target"] != config or "rps" not in run:
            continue
        cpu = run.get("cpu", {}).get("gateway_cpu_pct")
        cpu_ms = f"{cpu * 10.0 / run['rps']:.2f}" if cpu and run["rps"] else "-"
        lat = run["latency_ms"]
        print(f"| {config} | {workers} | {run['mode']} | {run['concurrency']} | {run['rps']:.0f} | "
              f"{run['rps'] / workers:.0f} | {lat['p50']:.2f} | {lat['p99']:.2f} | "
              f"{sum(run['errors'].values())} | {cpu_ms} |")
PY
