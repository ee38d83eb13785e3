#!/bin/sh
# The xmlsec1 program (Debian package xmlsec1): pysaml2 signs and verifies SAML XML with it.
command -v xmlsec1 >/dev/null 2>&1 && exit 0
log=$(mktemp)
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends xmlsec1; } >"$log" 2>&1; then
    cat "$log" >&2
    rm -f "$log"
    exit 1
fi
rm -f "$log"
