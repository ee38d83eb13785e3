"""The retry rule the service publishes (spec 7.2), written once for every place that states it.

On 429: wait ``Retry-After`` (or ``error.retry_after``), retry with the same ``Idempotency-Key``,
then back off 1 s, 2 s, 4 s, 8 s, never waiting past the window's reset (``RateLimit-Reset`` on
the public site, ``X-RateLimit-Reset`` on the gateway). On 5xx: at most 3 retries, and only for
GET, HEAD or a mutation with an ``Idempotency-Key``. 400, 401, 403, 404 and 409 are not retried.

The 429 messages (gateway and site), the chat proxy's ``next_steps``, AGENTS.md (and the skill
built from it) and the OpenAPI error texts use these strings; the error catalogue
(``http_facade/pages/error_codes.yaml``) and the documents say the same in their own words.
"""

from __future__ import annotations

BACKOFF_SECONDS = (1, 2, 4, 8)
BACKOFF = ", ".join(f"{seconds} s" for seconds in BACKOFF_SECONDS)  # "1 s, 2 s, 4 s, 8 s"
MAX_SERVER_ERROR_RETRIES = 3
GATEWAY_RESET = "X-RateLimit-Reset"
SITE_RESET = "RateLimit-Reset"

RATE_LIMITED = (
    "On 429: wait `Retry-After` seconds (or `error.retry_after`), retry with the same `Idempotency-Key`, "
    f"then back off {BACKOFF} between further retries, never waiting past the window's reset "
    f"(`{SITE_RESET}`; `{GATEWAY_RESET}` on the gateway)."
)
SERVER_ERROR = (
    f"On 5xx: at most {MAX_SERVER_ERROR_RETRIES} retries, only for GET, HEAD or a mutation with an "
    "`Idempotency-Key`, backing off exponentially with jitter (about 1 s, 2 s, 4 s)."
)
NOT_RETRIED = "400, 401, 403, 404 and 409 are not retried: fix the request instead."


def after_rate_limit(retry_after: int, reset_header: str, *, idempotent: bool = False) -> str:
    """What a 429's message tells its client to do (``idempotent``: the routes take an Idempotency-Key)."""
    same_key = " (with the same Idempotency-Key if the request had one)" if idempotent else ""
    return (
        f"retry after {retry_after} s{same_key}, then back off {BACKOFF} between further retries, "
        f"never waiting past {reset_header}"
    )
