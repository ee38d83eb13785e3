#!/usr/bin/env bash
# Benchmark agentgate's OpenAI-compatible gateway with the shared bench-kit (not a test).
#
#   bench/gateway/run.sh [--litellm] [--profile] [--no-agentgate]
#
# Starts the kit's mock upstream (127.0.0.1:18000), then `agentgate serve` (1 worker, production
# mode, a fresh temp data dir, one upstream "bench" mapping the public model to the kit's
# mock-gpt), creates a demo tenant and a live key through the CLI, and runs
# ../shared/bench-kit/run.sh against it with GATEWAY_PIDS set.
#   --litellm      afterwards run the kit's bench_litellm.sh (LiteLLM proxy, same machine, same knobs)
#   --profile      afterwards record the gateway under load with py-spy (.venv/bin/py-spy)
#   --no-agentgate skip the agentgate run (e.g. only the LiteLLM reference)
# Every knob of the kit's run.sh passes through (CONCURRENCY, DURATION, WARMUP, MODES, ...);
# GWBENCH_KIT names the kit's folder when the tree is not beside shared/ (a git worktree elsewhere).
# Results: ${GWBENCH_WORK:-/tmp/gwbench}/results/<timestamp>-<label>/results.md
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KIT="${GWBENCH_KIT:-$ROOT/../shared/bench-kit}"  # GWBENCH_KIT: where the kit is when this tree is not beside shared/
if [ ! -x "$KIT/run.sh" ] || [ ! -x "$KIT/upstream.sh" ]; then
  echo "error: the bench kit is missing: expected ../shared/bench-kit (from the repo root: $KIT)." >&2
  echo "       It is provided with the shared folder of the project; see ../shared/README.md." >&2
  exit 2
fi
LITELLM=0; PROFILE=0; AGENTGATE=1
for arg in "$@"; do
  case "$arg" in
    --litellm) LITELLM=1 ;;
    --profile) PROFILE=1 ;;
    --no-agentgate) AGENTGATE=0 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown argument: $arg" >&2; exit 2 ;;
  esac
done

VENV="${AGENTGATE_VENV:-$ROOT/.venv}"
PORT="${GATEWAY_PORT:-18080}"
UPSTREAM_PORT="${UPSTREAM_PORT:-18000}"
MODEL="${MODEL:-gpt-4o-mini}"            # a public catalogue model on the enterprise plan
UPSTREAM_MODEL="${UPSTREAM_MODEL:-mock-gpt}"
export GWBENCH_WORK="${GWBENCH_WORK:-${TMPDIR:-/tmp}/gwbench}"
DATA="$(mktemp -d "${TMPDIR:-/tmp}/agentgate-bench.XXXXXX")"
GW_PID=""; UP_STARTED=0

cleanup() {
  if [ -n "$GW_PID" ] && kill -0 "$GW_PID" 2>/dev/null; then
    kill -TERM "$GW_PID" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$GW_PID" 2>/dev/null || break; sleep 0.25; done
  fi
  [ "$UP_STARTED" = 1 ] && "$KIT/upstream.sh" stop "$UPSTREAM_PORT" >/dev/null || true
  rm -rf "$DATA"
}
trap cleanup EXIT

run_agentgate() {
  export AGENTGATE_MODE=production AGENTGATE_DATA_DIR="$DATA" AGENTGATE_LOG_LEVEL=WARNING
  export AGENTGATE_BILLING_ALLOW_SANDBOX_IN_PRODUCTION=true  # nothing is sold in a benchmark
  export AGENTGATE_PUBLIC_BASE_URL="http://127.0.0.1:$PORT"
  export AGENTGATE_UPSTREAMS="[{\"name\": \"bench\", \"base_url\": \"http://127.0.0.1:$UPSTREAM_PORT/v1\",
    \"api_key\": \"sk-mock-upstream\", \"models\": {\"$MODEL\": \"$UPSTREAM_MODEL\"}}]"
  unset AGENTGATE_ROUTES AGENTGATE_DATABASE_URL AGENTGATE_REDIS_URL

  if ! curl -fsS -o /dev/null "http://127.0.0.1:$UPSTREAM_PORT/health" 2>/dev/null; then
    "$KIT/upstream.sh" start "$UPSTREAM_PORT"; UP_STARTED=1
  fi
  "$VENV/bin/agentgate" migrate >/dev/null  # the operator commands never create an empty database
  "$VENV/bin/agentgate" tenants create --name bench-demo --plan enterprise --rate-limit 1000000000
  KEY="$("$VENV/bin/agentgate" keys create --tenant bench-demo --scopes chat,models --name bench 2>/dev/null | tail -1)"
  case "$KEY" in sk_live_*) ;; *) echo "error: no live key created (got: ${KEY:0:12}...)" >&2; exit 1 ;; esac

  "$VENV/bin/agentgate" serve --host 127.0.0.1 --port "$PORT" --workers 1 >"$DATA/gateway.log" 2>&1 &
  GW_PID=$!
  for _ in $(seq 1 100); do
    curl -fsS -o /dev/null "http://127.0.0.1:$PORT/health/live" 2>/dev/null && break
    kill -0 "$GW_PID" 2>/dev/null || { echo "agentgate exited:" >&2; cat "$DATA/gateway.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "agentgate pid $GW_PID on http://127.0.0.1:$PORT, model $MODEL -> $UPSTREAM_MODEL, key ${KEY:0:12}..."

  LABEL="${LABEL:-agentgate-w1}" GATEWAY_PIDS="$GW_PID" UPSTREAM_PORT="$UPSTREAM_PORT" \
    "$KIT/run.sh" "http://127.0.0.1:$PORT/v1" "$KEY" "$MODEL"

  if [ "$PROFILE" = 1 ]; then
    [ -x "$VENV/bin/py-spy" ] || "$VENV/bin/pip" install -q py-spy
    OUTP="$GWBENCH_WORK/results/profile-agentgate-$(date +%Y%m%d-%H%M%S)"; mkdir -p "$OUTP"
    "$VENV/bin/py-spy" record -p "$GW_PID" -r 200 -d 14 -f raw -o "$OUTP/nonstream.raw" >/dev/null 2>&1 &
    SPY=$!
    LABEL=profile CONCURRENCY=16 DURATION=12 WARMUP=1 MODES=nonstream TTFT_CONC= NO_SDK=1 SKIP_DIRECT=1 \
      OUT="$OUTP/run" "$KIT/run.sh" "http://127.0.0.1:$PORT/v1" "$KEY" "$MODEL" >/dev/null
    wait "$SPY" || true
    python3 "$KIT/lib/collapse_top.py" "$OUTP/nonstream.raw" 60 >"$OUTP/nonstream.txt"
    echo "profile: $OUTP/nonstream.txt"; head -45 "$OUTP/nonstream.txt"
  fi
  LOGCOPY="$GWBENCH_WORK/results/agentgate-gateway-$(date +%Y%m%d-%H%M%S).log"
  mkdir -p "$GWBENCH_WORK/results" && cp "$DATA/gateway.log" "$LOGCOPY"
  echo "gateway log: $LOGCOPY ($(grep -c ERROR "$LOGCOPY" || true) ERROR lines)"
  cleanup; GW_PID=""; UP_STARTED=0; DATA="$(mktemp -d "${TMPDIR:-/tmp}/agentgate-bench.XXXXXX")"
}

[ "$AGENTGATE" = 1 ] && run_agentgate
if [ "$LITELLM" = 1 ]; then
  "$KIT/bench_litellm.sh"
fi
