#!/bin/sh
# Chromium's headless shell (Debian package chromium-headless-shell: the same Chromium, headless only)
# for the browser tests (tests/browser), driven by Playwright by its path; Playwright's own browser
# download is never used. tests/browser/chromium.py falls back to the full browser (package chromium).
[ -x /usr/bin/chromium-headless-shell ] && exit 0
log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium-headless-shell; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
fi
rm -f "$log"
