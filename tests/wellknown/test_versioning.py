"""The versioning contract (spec 9): API-Version everywhere, pinning, deprecation, sunset, CORS."""

from __future__ import annotations

import re
from datetime import timedelta
from email.utils import parsedate_to_datetime

import http_sfv
import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.errors import VersionGone
from agent_server.policies.versions import ApiVersion, VersionRegistry
from http_facade.versioning import cors_options
from tests.wellknown.conftest import DEPRECATED, ENDING, NOW, RETIRED, make_versions

CURRENT = "2026-05-18"
VERSIONED = ["/health", "/api/tools.php", "/api/capabilities.php", "/.well-known/api-catalog", "/v1/models"]
UNVERSIONED = ["/api/status.php", "/status", "/.well-known/health"]


def served(app: FastAPI) -> set[str]:
    return {c.path_format for c in iter_route_contexts(app.routes)}


async def test_every_response_carries_the_current_version(client: httpx.AsyncClient) -> None:
    for path in [*VERSIONED, "/no/such/route", "/api/mcp.php"]:
        response = await client.get(path)
        assert response.headers["API-Version"] == CURRENT, path
    too_large = await client.post("/api/tools/call", content=b"x" * 2_000_000)
    assert too_large.status_code == 413 and too_large.headers["API-Version"] == CURRENT


async def test_status_routes_are_unversioned(client: httpx.AsyncClient, app: FastAPI) -> None:
    present = [p for p in UNVERSIONED if p in served(app)]
    if not present:
        pytest.skip("the public site's status routes are not served yet")
    for path in present:
        response = await client.get(path, headers={"API-Version": "1999-01-01"})
        assert "API-Version" not in response.headers, path
        assert response.status_code != 400, path


async def test_pinning_the_current_or_a_preview_version_is_echoed(client: httpx.AsyncClient) -> None:
    response = await client.get("/health", headers={"API-Version": CURRENT})
    assert response.status_code == 200 and response.headers["API-Version"] == CURRENT
    assert "Deprecation" not in response.headers
    preview = await client.get("/api/tools.php", headers={"API-Version": "2026-09-01-preview"})
    assert preview.status_code == 200 and preview.headers["API-Version"] == "2026-09-01-preview"


@pytest.mark.parametrize("value", ["1999-01-01", "latest", "2026-02-30-preview", "2026-05-18 ; x"])
async def test_an_unknown_version_is_a_400_in_the_route_envelope(
    client: httpx.AsyncClient, value: str
) -> None:
    site = await client.get("/api/tools.php", headers={"API-Version": value})
    assert site.status_code == 400
    error = site.json()["error"]
    assert error["code"] == "UNSUPPORTED_VERSION" and error["param"] == "API-Version"
    assert CURRENT in error["supported_versions"] and "documentation_url" in error
    gateway = await client.get("/v1/models", headers={"API-Version": value})
    assert gateway.status_code == 400
    assert gateway.json()["error"]["code"] == "unsupported_version"
    assert gateway.json()["error"]["type"] == "invalid_request_error"


async def test_a_deprecated_version_works_and_says_so(versioned: httpx.AsyncClient) -> None:
    response = await versioned.get("/api/tools.php", headers={"API-Version": DEPRECATED})
    assert response.status_code == 200 and response.headers["API-Version"] == DEPRECATED
    # The contract (spec 9): "Deprecation: <http-date>", an IMF-fixdate as Sunset is.
    deprecation = response.headers["Deprecation"]
    assert deprecation.endswith(" GMT") and not deprecation.startswith("@")
    deprecated_at = parsedate_to_datetime(deprecation)
    assert deprecated_at == NOW - timedelta(days=60)
    sunset = parsedate_to_datetime(response.headers["Sunset"])  # RFC 8594: an HTTP-date
    assert sunset == NOW + timedelta(days=300) and sunset >= deprecated_at
    links = http_links(response.headers["Link"])
    assert links["deprecation"] == "http://127.0.0.1:8000/docs/versioning"
    assert links["successor-version"] == "http://127.0.0.1:8000/openapi.json"
    assert "Warning" not in response.headers  # not yet in the final month
    assert (await versioned.get(links["deprecation"])).status_code == 200


def http_links(value: str) -> dict[str, str]:
    links: dict[str, str] = {}
    for part in value.split(", <"):
        target, *params = part.split(";")
        rel = next(p.split("=", 1)[1].strip('" ') for p in params if p.strip().startswith("rel="))
        links[rel] = target.strip().strip("<>")
    return links


async def test_the_final_month_adds_a_warning(versioned: httpx.AsyncClient) -> None:
    response = await versioned.get("/health", headers={"API-Version": ENDING})
    assert response.status_code == 200
    warning = response.headers["Warning"]
    assert warning.startswith('299 - "API version 2025-09-01 will be retired on ')
    assert response.headers["Sunset"] in warning and CURRENT in warning


async def test_a_retired_version_is_gone_with_migration_guidance(versioned: httpx.AsyncClient) -> None:
    site = await versioned.get("/api/tools.php", headers={"API-Version": RETIRED})
    assert site.status_code == 410
    error = site.json()["error"]
    assert error["code"] == "VERSION_GONE" and error["successor_version"] == CURRENT
    assert error["migration_guide"].endswith("/docs/versioning") and CURRENT in error["message"]
    gateway = await versioned.get("/v1/models", headers={"API-Version": RETIRED})
    assert gateway.status_code == 410 and gateway.json()["error"]["code"] == "version_gone"


async def test_time_moves_a_version_through_its_life(
    versioned: httpx.AsyncClient, clock: ManualClock
) -> None:
    assert (await versioned.get("/health", headers={"API-Version": DEPRECATED})).status_code == 200
    clock.advance(timedelta(days=290).total_seconds())
    assert "Warning" in (await versioned.get("/health", headers={"API-Version": DEPRECATED})).headers
    clock.advance(timedelta(days=11).total_seconds())
    assert (await versioned.get("/health", headers={"API-Version": DEPRECATED})).status_code == 410


def test_the_registry_refuses_inconsistent_versions() -> None:
    with pytest.raises(ValueError):
        ApiVersion("2026-13-01")
    with pytest.raises(ValueError):
        ApiVersion("2025-01-01", "deprecated")  # no successor
    with pytest.raises(ValueError):
        ApiVersion(
            "2025-01-01", "deprecated", deprecated_at=NOW, sunset_at=NOW - timedelta(1), successor=CURRENT
        )
    with pytest.raises(ValueError):
        VersionRegistry([ApiVersion("2025-01-01")], current=CURRENT)
    resolution = make_versions().resolve(RETIRED, NOW.timestamp())
    assert isinstance(resolution.error, VersionGone)


async def test_openapi_lists_the_versions_a_client_may_pin(versioned: httpx.AsyncClient) -> None:
    doc = (await versioned.get("/openapi.json")).json()
    assert doc["components"]["parameters"]["ApiVersion"]["schema"]["enum"] == [CURRENT, DEPRECATED, ENDING]


async def test_cors_exposes_the_version_headers(client: httpx.AsyncClient) -> None:
    origin = "http://localhost:5173"
    response = await client.get("/health", headers={"Origin": origin})
    assert response.headers["access-control-allow-origin"] == origin
    exposed = {h.strip().lower() for h in response.headers["access-control-expose-headers"].split(",")}
    assert {"api-version", "deprecation", "sunset", "link"} <= exposed
    preflight = await client.options(
        "/api/tools/call",
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "api-version",
        },
    )
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == origin
    foreign = await client.get("/health", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in foreign.headers
    # With or without an Origin, a cache must key the answer on it, and the version header is there.
    for answer in (response, foreign, await client.get("/health")):
        assert "origin" in answer.headers["vary"].lower() and answer.headers["api-version"] == CURRENT
    assert "access-control-allow-origin" not in (await client.get("/health")).headers


def test_port_wildcards_become_an_origin_regex() -> None:
    options = cors_options(["http://127.0.0.1:*", "https://app.example.com"])
    assert options["allow_origins"] == ["https://app.example.com"]
    pattern = re.compile(str(options["allow_origin_regex"]))
    assert pattern.fullmatch("http://127.0.0.1:8080") and pattern.fullmatch("http://127.0.0.1")
    assert not pattern.fullmatch("http://127.0.0.10:80") and not pattern.fullmatch("http://127.0.0.1.evil:80")


async def test_structured_header_fields_parse_where_present(client: httpx.AsyncClient) -> None:
    """RateLimit fields of the public site (spec 8) parse as RFC 9651 structured fields."""
    response = await client.post("/api/ask.php", json={"query": "What does the starter plan cost?"})
    present = [
        name for name in ("RateLimit-Policy", "RateLimit-Limit", "RateLimit") if name in response.headers
    ]
    if not present:
        pytest.skip("no structured rate-limit field on /api/ask.php yet")
    for name in present:
        field = http_sfv.List()
        field.parse(response.headers[name].encode())
        assert len(field) >= 1, name
    if "RateLimit-Policy" in response.headers:
        policy = http_sfv.List()
        policy.parse(response.headers["RateLimit-Policy"].encode())
        assert isinstance(policy[0].value, str) and policy[0].params["q"] >= 1
