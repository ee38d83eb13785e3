"""``/openapi.json``: valid OpenAPI 3.1 that documents every route, its errors and its security."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from fastapi.routing import iter_route_contexts
from openapi_spec_validator import validate

from agent_server.foundation.settings import Settings
from http_facade.app import create_app
from http_facade.errors import uses_gateway_envelope
from tests.wellknown.conftest import json_of
from wellknown.openapi import RawRoute, build_openapi

METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
DOCS_UI = {"/docs", "/docs/oauth2-redirect", "/redoc"}


def operations(doc: dict):
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method in item:
                yield path, method, item[method]


async def test_openapi_is_valid_31_with_the_contract_metadata(client: httpx.AsyncClient) -> None:
    doc = json_of(await client.get("/openapi.json"))
    validate(doc)  # openapi-spec-validator, OpenAPI 3.1 rules
    assert doc["openapi"].startswith("3.1")
    assert doc["info"]["version"] == "2026-05-18"
    assert doc["info"]["license"] == {"name": "Business Source License 1.1", "identifier": "BUSL-1.1"}
    schemes = doc["components"]["securitySchemes"]
    assert schemes["apiKeyBearer"] == {**schemes["apiKeyBearer"], "type": "http", "scheme": "bearer"}
    assert schemes["apiKeyHeader"] == {"type": "apiKey", "in": "header", "name": "X-API-Key"}
    assert schemes["adminJWT"]["bearerFormat"] == "JWT"
    assert {"GatewayError", "SiteError"} <= set(doc["components"]["schemas"])
    ids = [op["operationId"] for _, _, op in operations(doc)]
    assert len(ids) == len(set(ids))


async def test_every_route_of_the_app_is_documented(client: httpx.AsyncClient, app: FastAPI) -> None:
    doc = json_of(await client.get("/openapi.json"))
    missing = []
    for context in iter_route_contexts(app.routes):
        path = context.path_format
        if path in DOCS_UI or not context.methods:
            continue
        documented = doc["paths"].get(path, {})
        for method in context.methods:
            if method == "HEAD" and "get" in documented:
                continue  # the HEAD twin of a documented GET (same route or a HEAD-only one)
            if method.lower() not in documented:
                missing.append(f"{method} {path}")
    assert not missing, f"routes missing from /openapi.json: {missing}"
    mcp = doc["paths"]["/api/mcp.php"]
    assert {"get", "post"} <= set(mcp)
    assert "application/json" in mcp["post"]["requestBody"]["content"]


async def test_the_mcp_delete_exists_with_sessions_only(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    # DELETE ends a session: documented while it always answered 405 (sessions are off by default).
    doc = json_of(await client.get("/openapi.json"))
    for path in ("/api/mcp.php", "/api/mcp.php/"):
        assert "delete" not in doc["paths"][path], path
        refused = await client.delete(path)
        assert refused.status_code == 405 and refused.headers["allow"] == "GET, HEAD, POST", path
    with_sessions = create_app(settings.model_copy(update={"mcp_sessions": True})).openapi()
    [session_id] = with_sessions["paths"]["/api/mcp.php"]["delete"]["parameters"][:1]
    assert session_id["name"] == "Mcp-Session-Id" and session_id["required"] is True


async def test_validation_errors_are_400_in_the_envelope_of_the_path(client: httpx.AsyncClient) -> None:
    doc = json_of(await client.get("/openapi.json"))
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    for path, method, op in operations(doc):
        responses = op["responses"]
        assert "422" not in responses, f"{method} {path}"
        envelope = "GatewayError" if uses_gateway_envelope(path) else "SiteError"
        for status in ("400", "500"):
            schema = responses[status]["content"]["application/json"]["schema"]
            assert envelope in str(schema), f"{method} {path} {status}: {schema}"


async def test_gateway_routes_declare_their_security(client: httpx.AsyncClient) -> None:
    doc = json_of(await client.get("/openapi.json"))
    for path, method, op in operations(doc):
        if path.startswith("/v1/"):
            assert {"apiKeyBearer": []} in op["security"] and {"apiKeyHeader": []} in op["security"], path
            assert {"401", "403", "429"} <= set(op["responses"])
        elif {"adminJWT": []} in (op.get("security") or []):
            refused = await client.request(method.upper(), path.replace("{", "").replace("}", ""), json={})
            assert refused.status_code == 401, f"{method} {path} declares a JWT but does not ask for one"
        elif path.startswith("/admin/") and "{" not in path:
            answer = await client.request(method.upper(), path, json={})
            assert answer.status_code != 401, f"{method} {path} is documented as public but refuses"
    secured = {(p, m) for p, m, op in operations(doc) if {"adminJWT": []} in (op.get("security") or [])}
    assert ("/admin/api-keys", "post") in secured and ("/admin/auth/login", "post") not in secured


async def test_versioned_operations_document_the_api_version_header(client: httpx.AsyncClient) -> None:
    doc = json_of(await client.get("/openapi.json"))
    for path, _, op in operations(doc):
        refs = [p.get("$ref") for p in op.get("parameters", [])]
        if path in ("/api/status.php", "/status", "/.well-known/health"):
            assert "#/components/parameters/ApiVersion" not in refs
        else:
            assert "#/components/parameters/ApiVersion" in refs, path
            assert "410" in op["responses"]


def test_build_openapi_is_pure_and_generic() -> None:
    ok = {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}
    invalid = {
        "description": "Validation Error",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/HTTPValidationError"}}},
    }
    generated = {
        "openapi": "3.1.0",
        "info": {"title": "t", "version": "x"},
        "paths": {
            "/v1/things": {
                "post": {
                    "operationId": "things",
                    "responses": {"200": ok, "422": invalid, "201": {"description": "new"}},
                }
            },
            "/api/things": {
                "get": {"operationId": "site", "responses": {"200": ok, "418": {"description": "teapot"}}}
            },
        },
        "components": {
            "schemas": {"HTTPValidationError": {"type": "object"}, "ValidationError": {"type": "object"}}
        },
    }
    before = repr(generated)
    doc = build_openapi(
        generated,
        Settings(),
        current_version="2026-05-18",
        versions=["2026-05-18"],
        raw_routes=[RawRoute("/raw", frozenset({"GET", "HEAD"}), "A raw route")],
        uses_gateway_envelope=lambda path: path.startswith("/v1/"),
    )
    assert repr(generated) == before  # the input is not touched
    validate(doc)
    gateway = doc["paths"]["/v1/things"]["post"]
    assert "422" not in gateway["responses"] and gateway["security"]
    assert "GatewayError" in str(gateway["responses"]["400"]) and "GatewayError" in str(
        gateway["responses"]["409"]
    )
    assert gateway["responses"]["201"]["content"] == ok["content"]
    site = doc["paths"]["/api/things"]["get"]["responses"]
    assert "SiteError" in str(site["418"]) and "SiteError" in str(site["429"])
    assert doc["paths"]["/raw"]["get"]["summary"] == "A raw route" and "head" not in doc["paths"]["/raw"]
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    assert "ValidationError" not in doc["components"]["schemas"]
