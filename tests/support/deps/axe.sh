#!/bin/sh
# axe-core (npm, pinned in tests/browser/node/package-lock.json), the accessibility engine the browser
# tests inject into every page: `npm ci` there when missing or out of date.
set -e
dir="$(cd "$(dirname "$0")/../../browser/node" && pwd)"
stamp="$dir/node_modules/.agentgate-lock"
if [ -f "$dir/node_modules/axe-core/axe.min.js" ] && cmp -s "$dir/package-lock.json" "$stamp"; then
    exit 0
fi
log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
if ! command -v npm >/dev/null 2>&1; then
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends npm; } >"$log" 2>&1 || {
        cat "$log" >&2; rm -f "$log"; exit 1
    }
fi
if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
fi
rm -f "$log"
cp "$dir/package-lock.json" "$stamp"
