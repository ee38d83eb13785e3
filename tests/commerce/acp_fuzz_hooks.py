"""schemathesis hooks of tests/commerce/test_acp_schemathesis.py (loaded with SCHEMATHESIS_HOOKS): a
generated request that carries ``Signature`` or ``Timestamp`` is signed for real with the fuzzing
platform's secret, so the server's verification is exercised instead of refusing every case."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from datetime import UTC, datetime
from typing import Any

import schemathesis

SECRET = os.environ.get("ACP_FUZZ_SIGNING_SECRET", "")


@schemathesis.hook
def before_call(ctx: Any, case: Any, **kwargs: Any) -> None:
    headers = case.headers
    if not SECRET or headers is None or not ({"Signature", "Timestamp"} & set(headers)):
        return
    body = case.body if isinstance(case.body, dict | list | str | int | float | bool) else None
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    canonical = json.dumps(
        {} if body is None else body, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    mac = hmac.new(SECRET.encode(), stamp.encode() + b"." + canonical.encode(), hashlib.sha256).digest()
    headers["Signature"] = base64.urlsafe_b64encode(mac).decode().rstrip("=")
    headers["Timestamp"] = stamp
