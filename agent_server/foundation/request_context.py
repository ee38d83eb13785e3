"""The request id of the request being served, for its log lines and its upstream calls.

The edge middleware sets it once per request (``X-Request-Id`` when the client sent a sane one,
else a new one) in a context variable: every task the request starts inherits it, so a log line
anywhere below the request carries it without passing it around.
"""

from __future__ import annotations

import random
import re
from contextvars import ContextVar

REQUEST_ID: ContextVar[str | None] = ContextVar("agentgate_request_id", default=None)
HEADER = "X-Request-Id"
# What we pass on as is: a token of common id characters, bounded (it goes into every log line).
_SANE = re.compile(rb"[A-Za-z0-9._:/+=@-]{1,128}").fullmatch
# Ids need to be unique, not secret: a PRNG costs a tenth of os.urandom per request.
_random = random.Random()


def accepted_request_id(value: bytes) -> str | None:
    """The client's id when it is a sane token, else None (a new one is made)."""
    return value.decode("ascii") if _SANE(value) else None


def new_request_id() -> str:
    return _random.randbytes(16).hex()  # 32 hex digits, the size of a trace id


def current_request_id() -> str | None:
    return REQUEST_ID.get()


# The caller's Authorization header where a capability authenticates by itself (the ACP tools take an
# agent platform's credential): bound by the HTTP layer around MCP requests and direct tool calls.
AUTHORIZATION: ContextVar[str | None] = ContextVar("agentgate_authorization", default=None)
