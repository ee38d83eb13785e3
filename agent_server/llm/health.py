"""Upstream reachability, checked in the background and read by ``/health`` (never on the request path).

Every ``interval`` seconds each configured upstream gets ``GET {base_url}/models`` with its key,
through a transport built like the one requests use (same proxy, same TLS trust), bounded by
``timeout``. Any HTTP answer below 500 counts as up (a 404 still proves the server answers), except
401/403 when we sent a key (it is rejected) and 407 (the proxy wants credentials); a refused or
timed-out connection, a TLS failure or a 5xx counts as down. The latest result per upstream lives
in the process: each process checks for itself, one small request per upstream and interval.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from agent_server.foundation.settings import Settings
from agent_server.foundation.settings_llm import MOCK_BACKEND, UpstreamConfig
from agent_server.foundation.tasks import stop_tasks
from agent_server.llm.anthropic_native import ANTHROPIC_VERSION
from agent_server.llm.transport import TransportKind, upstream_transport

log = logging.getLogger("agentgate.llm")
EXTRAS_KEY = "upstream_health"  # where the app's monitor hangs in ``services.extras``


@dataclass(frozen=True)
class UpstreamState:
    up: bool
    reason: str  # "ok", or why it is down; never a host or URL (the /health document is public)


@dataclass(frozen=True)
class _Target:
    url: httpx.URL
    headers: list[tuple[bytes, bytes]] = field(repr=False)  # holds the upstream's key
    transport: httpx.AsyncBaseTransport
    keyed: bool  # without a key of ours (callers bring theirs), a 401 only proves the server answers


class UpstreamHealth:
    """The latest state of each upstream, refreshed by ``check_all`` (the background loop calls it)."""

    def __init__(
        self,
        upstreams: Sequence[UpstreamConfig],
        *,
        transport_kind: TransportKind = "pooled",
        interval: float = 15.0,
        timeout: float = 5.0,
    ) -> None:
        self._interval, self._timeout = interval, timeout
        self._timeouts = {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}
        self._targets = {u.name: _target(u, transport_kind) for u in upstreams}
        self.states: dict[str, UpstreamState] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._round = asyncio.Lock()  # one round at a time: an older result never lands after a newer

    @classmethod
    def from_settings(cls, settings: Settings) -> UpstreamHealth:
        return cls(
            settings.upstreams,
            transport_kind=settings.llm_http_transport,
            interval=settings.llm_health_check_seconds,
            timeout=settings.llm_health_timeout_seconds,
        )

    @property
    def monitored(self) -> bool:
        return bool(self._targets)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[UpstreamHealth]:
        if self._targets:
            self._tasks.append(asyncio.create_task(self._run(), name="upstream-health"))
        try:
            yield self
        finally:
            await stop_tasks(self._tasks)
            for target in self._targets.values():
                await target.transport.aclose()

    async def _run(self) -> None:
        while True:
            await self.check_all()
            await asyncio.sleep(self._interval)

    async def check_all(self) -> None:
        """Check every upstream at once and keep the results; a change is logged."""
        async with self._round:
            names = list(self._targets)
            results = await asyncio.gather(*(self._check(name) for name in names))
            for name, (state, detail) in zip(names, results, strict=True):
                before = self.states.get(name)
                self.states[name] = state
                if not state.up and (before is None or before.up):
                    log.warning("llm upstream %s is down: %s (%s)", name, state.reason, detail)
                elif state.up and before is not None and not before.up:
                    log.info("llm upstream %s is reachable again", name)

    async def _check(self, name: str) -> tuple[UpstreamState, str]:
        target = self._targets[name]
        request = httpx.Request(
            "GET", target.url, headers=target.headers, extensions={"timeout": self._timeouts}
        )
        try:
            async with asyncio.timeout(self._timeout):
                response = await target.transport.handle_async_request(request)
                await response.aclose()  # the status is the answer; a model list can be large
        except (httpx.HTTPError, OSError, TimeoutError) as exc:
            return UpstreamState(False, _why(exc)), str(exc) or type(exc).__name__
        status = response.status_code
        if status in (401, 403) and target.keyed:
            return UpstreamState(False, f"credentials rejected (HTTP {status})"), "check its api_key"
        if status == 407:
            return UpstreamState(False, "proxy refused (HTTP 407)"), "check the proxy's credentials"
        if status >= 500:
            return UpstreamState(False, f"HTTP {status}"), f"GET {target.url.path} answered {status}"
        return UpstreamState(True, "ok"), ""

    async def status(self, llm: Any) -> str:
        """``masterLlm`` of /health, with the routes of the router ``llm`` (when it is one)."""
        table = getattr(llm, "table", None)
        routes = None
        if callable(table):
            routes = [[entry.backend for entry in route.entries] for route in (await table()).routes.values()]
        return self.summary(routes)

    def summary(self, routes: Iterable[Sequence[str]] | None = None) -> str:
        """``ok``; ``degraded: ...`` when an upstream a route uses is down; ``error: ...`` when no
        route that uses an upstream has a reachable backend left (the mock always is)."""
        if not self._targets:
            return "ok (mock)"
        routes = [[name] for name in self._targets] if routes is None else routes
        relevant = [route for route in routes if any(name in self._targets for name in route)]
        used = {name for route in relevant for name in route if name in self._targets}
        if not relevant:
            return "ok (no route uses an upstream)"
        if not used & self.states.keys():
            return "unknown (first check pending)"
        down = sorted(name for name in used if not self.states.get(name, UpstreamState(True, "")).up)
        if not down:
            return "ok"
        reasons = ", ".join(f"{name} ({self.states[name].reason})" for name in down)
        stranded = [route for route in relevant if not any(self._serves(name) for name in route)]
        if len(stranded) == len(relevant):
            return f"error: no reachable upstream: {reasons}"
        message = f"degraded: unreachable: {reasons}"
        if stranded:
            message += f"; {len(stranded)} of {len(relevant)} models have no reachable backend"
        return message

    def _serves(self, name: str) -> bool:
        if name == MOCK_BACKEND:
            return True
        state = self.states.get(name)
        return name in self._targets and (state is None or state.up)  # not checked yet: assumed up


def upstream_health(extras: dict[str, Any]) -> UpstreamHealth | None:
    """The app's monitor, once its lifespan started it."""
    return extras.get(EXTRAS_KEY)


def _target(config: UpstreamConfig, kind: TransportKind) -> _Target:
    headers = [
        (b"Accept", b"application/json"),
        (b"Accept-Encoding", b"identity"),
        (b"User-Agent", b"agentgate"),
    ]
    secret = config.api_key.get_secret_value()
    if secret and config.dialect == "anthropic":  # keyed as the Messages API is (anthropic_native.py)
        headers += [(b"x-api-key", secret.encode()), (b"anthropic-version", ANTHROPIC_VERSION.encode())]
    elif secret:
        headers.append((b"Authorization", f"Bearer {secret}".encode()))
    transport = upstream_transport(config, kind, 1)
    return _Target(httpx.URL(f"{config.base_url}/models"), headers, transport, bool(secret))


def _why(exc: BaseException) -> str:
    """A short public reason: the first cause we recognise along the exception chain."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError):
            return "TLS certificate not trusted"
        if isinstance(seen, ssl.SSLError):
            return "TLS handshake failed"
        if isinstance(seen, ConnectionRefusedError) or getattr(seen, "errno", None) == errno.ECONNREFUSED:
            return "connection refused"
        if isinstance(seen, socket.gaierror):
            return "host name not resolved"
        if isinstance(seen, httpx.ProxyError):
            return "proxy refused the tunnel"
        if isinstance(seen, (TimeoutError, httpx.TimeoutException)):
            return "timeout"
        seen = seen.__cause__ or seen.__context__
    return "cannot connect" if isinstance(exc, httpx.ConnectError) else type(exc).__name__
