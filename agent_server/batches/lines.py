"""One batch line through the same gateway path as a live call (agent_server/gateway/relay.py).

The key's scope and budget (what ``Gateway.admit`` checks on a live call), then ``Exchange.run``:
the plan's entitlements, the key's allowed models, routing and fallback, the usage row with its
cost. The row carries a token derived from the batch and the line, so a line that runs twice (its
worker was killed before the line's result was recorded) is billed once; its endpoint is
``batch/<endpoint>`` and its cost has the plan's batch discount taken off (docs/batches.md).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from typing import Any, NamedTuple

from pydantic import ValidationError

from agent_server.files.jsonl import RequestLine
from agent_server.foundation.errors import AgentError, PermissionDenied, ValidationFailed, gateway_envelope
from agent_server.foundation.request_context import REQUEST_ID
from agent_server.gateway.auth import KeyPrincipal
from agent_server.gateway.bodies import read_call
from agent_server.gateway.relay import Exchange
from agent_server.gateway.response_store import ResponseStore
from agent_server.gateway.responses import StoredResponses
from agent_server.gateway.service import METERED_SCOPES, Caller, Gateway
from agent_server.llm.types import CHAT, COMPLETIONS, EMBEDDINGS, RESPONSES, Answer

log = logging.getLogger("agentgate.batches")


class Target(NamedTuple):
    """What a batch endpoint is on the live path: key scope, body path, usage name, plan feature."""

    scope: str
    path: str
    usage_name: str
    feature: str | None = None


TARGETS = {
    "/v1/chat/completions": Target("chat", CHAT, "chat"),
    "/v1/embeddings": Target("embeddings", EMBEDDINGS, "embeddings", "embeddings"),
    "/v1/completions": Target("chat", COMPLETIONS, "completions"),
    "/v1/responses": Target("chat", RESPONSES, "responses"),  # stored and chained as live (responses.py)
}
USAGE_PREFIX = "batch/"  # usage rows of batch lines: batch/chat, batch/embeddings, batch/completions, ...


class Outcome(NamedTuple):
    line: int
    custom_id: str
    status_code: int
    request_id: str
    body: dict[str, Any] | None


def line_token(batch_id: str, line: int) -> str:
    """The usage row token of a line: the same on every run of it."""
    return hashlib.sha256(f"{batch_id}:{line}".encode()).hexdigest()[:32]


async def run_line(
    gateway: Gateway, principal: KeyPrincipal, batch_id: str, line: RequestLine, discount: int
) -> Outcome:
    target = TARGETS[line.url]
    token = line_token(batch_id, line.number)
    request_id = f"batch_req_{token[:24]}"
    REQUEST_ID.set(request_id)  # the usage row's request id (this runs in a task of its own)
    caller = Caller(principal, {}, time.perf_counter())
    exchange = Exchange(gateway, caller, None, USAGE_PREFIX + target.usage_name, None)
    exchange.row_token, exchange.discount = token, discount
    stored = StoredResponses(ResponseStore.of(gateway.services)) if target.path == RESPONSES else None
    try:
        try:
            await _admit(gateway, principal, target.scope)
            call = read_call(target.path, json.dumps(line.body).encode(), int(gateway.clock.now()))
            if stored is not None:
                call = await stored.chain(caller, call)  # previous_response_id, as a live call
        except ValidationError as exc:
            raise await exchange.refuse(_first_problem(exc)) from None
        except AgentError as err:
            raise await exchange.refuse(err) from None
        answer = await exchange.run(call, feature=target.feature)
        if stored is not None:
            answer = await stored.keep(caller, call, answer)
    except AgentError as err:
        return Outcome(line.number, line.custom_id, err.http_status, request_id, gateway_envelope(err))
    except Exception:
        log.exception("batch %s line %d failed unexpectedly", batch_id, line.number)
        failed = AgentError("The request failed unexpectedly.")
        return Outcome(line.number, line.custom_id, 500, request_id, gateway_envelope(failed))
    assert isinstance(answer, Answer)  # batch lines never stream (files/jsonl.py)
    return Outcome(line.number, line.custom_id, 200, request_id, answer.data)


async def _admit(gateway: Gateway, principal: KeyPrincipal, scope: str) -> None:
    """What ``Gateway.admit`` checks after the key and the rate limit (the batch limiter's)."""
    if scope not in principal.scopes:
        raise PermissionDenied(f"This API key lacks the '{scope}' scope; create a key with it.")
    if principal.budget is not None and scope in METERED_SCOPES:
        await gateway.budgets.check(principal.key_id, principal.budget)


def _first_problem(exc: ValidationError) -> ValidationFailed:
    problem = exc.errors(include_url=False)[0]
    where = ".".join(str(part) for part in problem.get("loc", ()))
    return ValidationFailed(f"{where}: {problem.get('msg', 'invalid')}", param=where or None)
