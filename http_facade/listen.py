"""``agentgate serve``'s address: bound and listening before anything else happens, then handed
to uvicorn.

A busy port is one clear error line before a migration runs or a banner is printed. The socket
listens from the bind on, so a client that connects as soon as the banner appears waits in the
backlog until the app has started, instead of being refused; the same socket is what every worker
serves, so nothing queued there is dropped.
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


BACKLOG = 2048  # uvicorn's default: connections queue here while the app starts


def bind_listener(host: str, port: int) -> socket.socket:
    """A TCP socket bound to host:port and listening, as uvicorn would bind it."""
    listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart needs no TIME_WAIT pause
    try:
        listener.bind((host, port))
    except OSError as exc:
        listener.close()
        reason = "the port is already in use" if exc.errno == errno.EADDRINUSE else exc.strerror or str(exc)
        raise ListenError(f"cannot listen on {host}:{port}: {reason}") from None
    listener.listen(BACKLOG)
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

    from http_facade.http_protocol import IMPORT_PATH

    # Bounded request heads (431, 414); an import string, so that spawned workers load it too. No
    # route is a WebSocket: uvicorn then answers an upgrade request as plain HTTP and never imports
    # the websockets library.
    config = uvicorn.Config(app, backlog=BACKLOG, http=IMPORT_PATH, ws="none", **options)
    if config.workers > 1:
        from uvicorn.supervisors import Multiprocess

        # What uvicorn.run does for workers, with our listening socket instead of a second bind:
        # connections already queued on it are served by the workers, not refused by a close.
        Multiprocess(config, sockets=[listener]).run()
        return 0
    server = uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):  # re-raised by uvicorn after its graceful shutdown
        server.run(sockets=[listener])
    return 0 if server.started else 1
