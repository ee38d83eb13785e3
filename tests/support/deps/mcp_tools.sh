#!/bin/sh
# The MCP conformance suite and the MCP Inspector CLI (Node packages pinned in tests/mcp/node), run by
# tests/mcp under the Node 22 that node.sh installs (reused, not downloaded twice): `npm ci` there when
# missing or out of date.
set -e
deps="$(cd "$(dirname "$0")" && pwd)"
sh "$deps/node.sh"  # Node 22 first; quiet when it is there
dir="$(cd "$deps/../../mcp/node" && pwd)"
stamp="$dir/node_modules/.agentgate-lock"
if [ -x "$dir/node_modules/.bin/conformance" ] && cmp -s "$dir/package-lock.json" "$stamp"; then
    exit 0
fi
log=$(mktemp)
if ! (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
fi
rm -f "$log"
cp "$dir/package-lock.json" "$stamp"
