#!/bin/sh
# Chromium (Debian package chromium) for the browser tests (tests/browser), driven by Playwright by
# its path; Playwright's own browser download is never used.
[ -x /usr/bin/chromium ] && exit 0
log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
fi
rm -f "$log"
