"""Splitting a URL that came from outside (a request, a report, a provider's metadata).

``urllib.parse.urlsplit`` raises ``ValueError`` on some text (an unclosed IPv6 bracket such as
``https://[abc``, or a bracketed host that is not an IPv6 address); ``port`` raises on a port
that is not a number from 0 to 65535. Every caller that reads such input splits it here, so the
answer is ``None`` and the caller's own "not a valid URL" error, never a 500.
"""

from __future__ import annotations

from urllib.parse import SplitResult, urlsplit


def split_url(text: str) -> SplitResult | None:
    """The parts of ``text``, or None when it cannot be split or its port is not a valid number."""
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018  (evaluated for its ValueError on a bad port)
    except ValueError:
        return None
    return parts
