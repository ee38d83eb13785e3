"""The process's one client TLS context for outbound HTTPS that trusts the public CA bundle.

Building a context loads the CA bundle, tens of milliseconds of CPU: done once per process and
shared by every client (an ``SSLContext`` is safe to share), not once per client or per delivery.
Upstreams with their own CA bundle or client certificate build theirs (``llm/egress.py``).
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def public_ca_context() -> ssl.SSLContext:
    """Verifies certificates and host names as httpx does by default: against ``SSL_CERT_FILE`` or
    ``SSL_CERT_DIR`` when the environment sets one, else the bundled public CAs (certifi)."""
    return httpx.create_ssl_context()
