"""Splitting outside URLs: what urllib refuses is None, never an exception."""

from __future__ import annotations

import pytest

from agent_server.foundation.urls import split_url


@pytest.mark.parametrize(
    "text", ["https://[abc", "http://[::1", "https://[not-ipv6]/x", "https://a.example:70000/", "http://a:b/"]
)
def test_what_urllib_refuses_is_none(text: str) -> None:
    assert split_url(text) is None


def test_a_usual_url_keeps_its_parts() -> None:
    parts = split_url("https://a.example:8443/p?q=1#f")
    assert parts is not None
    assert (parts.scheme, parts.hostname, parts.port, parts.path, parts.query) == (
        "https",
        "a.example",
        8443,
        "/p",
        "q=1",
    )
    assert split_url("") is not None and split_url("inline") is not None  # no scheme: parts, no error
