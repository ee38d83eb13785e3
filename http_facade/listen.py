"""``agentgate serve``'s address: bound before anything else happens, then handed to uvicorn.

A busy port is one clear error line before a migration runs or a banner is printed, and the
first-start banner (printed while the app starts) appears only once the address is ours.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import socket
from typing import Any

WILDCARDS = frozenset({"", "0.0.0.0", "::"})


class ListenError(RuntimeError):
    """The address cannot be bound; the message says which and why."""


def bind_listener(host: str, port: int) -> socket.socket:
    """A bound (not yet listening) TCP socket on host:port, as uvicorn would bind it."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart needs no TIME_WAIT pause
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        reason = "the port is already in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise ListenError(f"cannot listen on {host}:{port}: {reason}") from None
    listener.set_inheritable(True)  # the worker processes serve it too
    return listener


def http_url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def served_url(host: str, port: int) -> str:
    """The base URL of a bound address as people and clients on this host reach it: ``localhost`` for
    a loopback or wildcard address (browsers allow passkeys on a name, never on an IP address, and
    localhost reaches the loopback address), else the host itself."""
    if host in WILDCARDS or host == "localhost" or _loopback(host):
        return http_url("localhost", port)
    return http_url(host, port)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def run_uvicorn(listener: socket.socket, app: str, **options: Any) -> int:
    """Serve ``app`` with uvicorn on ``listener``; 1 when the app failed to start."""
    import uvicorn

    if options.get("workers", 1) > 1:
        # uvicorn's supervisor binds in its parent before any worker starts the app; it is given the
        # address (free again an instant later) rather than the socket through its internal API.
        listener.close()
        uvicorn.run(app, **options)
        return 0
    server = uvicorn.Server(uvicorn.Config(app, **options))
    with contextlib.suppress(KeyboardInterrupt):  # re-raised by uvicorn after its graceful shutdown
        server.run(sockets=[listener])
    return 0 if server.started else 1
