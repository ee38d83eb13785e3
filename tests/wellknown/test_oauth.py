"""OAuth discovery (RFC 8414, RFC 9728), the 401 challenge, POST /agent/auth and the planned endpoints."""

from __future__ import annotations

import re

import httpx
import jsonschema
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

from tests.wellknown.conftest import json_of

HTTPS = "https://api.agentgate.example"
PRM_URL = f"{HTTPS}/.well-known/oauth-protected-resource"
AGENT_AUTH_SCHEMA = {  # the agent_auth block as checked in the standards reference (workos/auth.md)
    "type": "object",
    "required": ["register_uri", "identity_types_supported"],
    "properties": {
        "skill": {"type": "string", "format": "uri"},
        "register_uri": {"type": "string", "format": "uri"},
        "identity_types_supported": {
            "type": "array",
            "minItems": 1,
            "items": {"enum": ["anonymous", "identity_assertion", "service_auth"]},
        },
    },
}
# RFC 9110 section 11.6.1: challenge = auth-scheme [ 1*SP ( token68 / #auth-param ) ]
TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
QUOTED = r'"(?:[^"\\]|\\.)*"'
PARAM = rf"{TOKEN}\s*=\s*(?:{TOKEN}|{QUOTED})"
CHALLENGE = re.compile(rf"^{TOKEN}(?: +{PARAM}(?:\s*,\s*{PARAM})*)?$")


async def test_authorization_server_metadata_passes_authlib_and_the_mcp_sdk(
    https_client: httpx.AsyncClient,
) -> None:
    response = await https_client.get("/.well-known/oauth-authorization-server")
    doc = json_of(response)
    assert response.headers["content-type"].startswith("application/json")
    AuthorizationServerMetadata(doc).validate()
    metadata = OAuthMetadata.model_validate(doc)
    assert str(metadata.issuer).rstrip("/") == HTTPS
    assert doc["register_uri"] == f"{HTTPS}/register"
    jsonschema.validate(doc["agent_auth"], AGENT_AUTH_SCHEMA, format_checker=jsonschema.FormatChecker())
    assert doc["agent_auth"]["identity_types_supported"] == ["anonymous", "identity_assertion"]
    assert doc["agent_auth"]["identity_assertion"]["assertion_types_supported"] == [
        "urn:ietf:params:oauth:token-type:id-jag"
    ]
    assert doc["agent_auth"]["register_uri"] == f"{HTTPS}/agent/auth"


async def test_every_endpoint_the_metadata_names_exists(https_client: httpx.AsyncClient) -> None:
    doc = json_of(await https_client.get("/.well-known/oauth-authorization-server"))
    assert (await https_client.get(doc["register_uri"])).status_code == 200
    # Each OAuth endpoint answers in OAuth's own words (the full flows: tests/agent_auth/test_oauth_*.py).
    authorize = await https_client.get(
        doc["authorization_endpoint"], params={"client_id": "x", "response_type": "code"}
    )
    assert authorize.status_code == 400 and authorize.json()["error"] == "invalid_client"
    token = await https_client.post(doc["token_endpoint"], data={"grant_type": "authorization_code"})
    assert token.status_code in (400, 401) and token.json()["error"] == "invalid_client"
    registered = await https_client.post(doc["registration_endpoint"], json={"redirect_uris": ["ftp://x"]})
    assert registered.status_code == 400 and registered.json()["error"] == "invalid_client_metadata"
    revoked = await https_client.post(doc["revocation_endpoint"], data={"token": "x"})
    assert revoked.status_code in (400, 401) and revoked.json()["error"] == "invalid_client"
    assert "oauth_status" not in doc and doc["agent_auth"]["status"] == "live"
    assert doc["code_challenge_methods_supported"] == ["S256"] and "admin" not in doc["scopes_supported"]
    anonymous = {"identity_type": "anonymous", "email": "agent@example.com"}
    assert (await https_client.post(doc["agent_auth"]["register_uri"], json=anonymous)).status_code == 201


async def test_protected_resource_metadata_passes_the_mcp_sdk(https_client: httpx.AsyncClient) -> None:
    doc = json_of(await https_client.get("/.well-known/oauth-protected-resource"))
    metadata = ProtectedResourceMetadata.model_validate(doc)
    assert str(metadata.resource).rstrip("/") == HTTPS
    assert [str(a).rstrip("/") for a in metadata.authorization_servers] == [HTTPS]
    issuer = json_of(await https_client.get("/.well-known/oauth-authorization-server"))["issuer"]
    assert doc["authorization_servers"] == [issuer]


def _challenge_params(value: str) -> dict[str, str]:
    assert CHALLENGE.match(value), value
    return {k: v.strip('"') for k, v in re.findall(rf"({TOKEN})\s*=\s*({TOKEN}|{QUOTED})", value)}


async def test_every_401_carries_the_bearer_challenge(https_client: httpx.AsyncClient) -> None:
    attempts = [
        https_client.get("/v1/models"),
        https_client.get("/v1/models", headers={"Authorization": "Bearer sk_test_nope"}),
        https_client.post("/admin/api-keys", json={"name": "x", "scopes": ["chat"]}),
        https_client.post(
            "/admin/api-keys", json={"name": "x"}, headers={"Authorization": "Bearer not.a.jwt"}
        ),
    ]
    for attempt in attempts:
        response = await attempt
        assert response.status_code == 401, response.text
        challenge = response.headers["WWW-Authenticate"]
        assert challenge.startswith("Bearer ")
        params = _challenge_params(challenge)
        assert params["realm"] == "agentgate"
        assert params["error"] == "invalid_token"
        assert params["resource_metadata"] == PRM_URL
        assert (await https_client.get(params["resource_metadata"])).status_code == 200


async def test_agent_auth_validates_then_answers_what_is_live(client: httpx.AsyncClient) -> None:
    bad = [
        {},
        {"identity_type": "password"},
        {"identity_type": "anonymous"},
        {"identity_type": "anonymous", "email": "not-an-address"},
        {"identity_type": "identity_assertion"},
        {"identity_type": "anonymous", "email": "a@b.example", "extra": 1},
    ]
    for body in bad:
        response = await client.post("/agent/auth", json=body)
        assert response.status_code == 400, (body, response.text)
        error = response.json()["error"]
        assert set(error) >= {"type", "message", "code", "param"}  # the gateway envelope (spec 7.1)
        assert error["type"] == "invalid_request_error"
    missing = (await client.post("/agent/auth", json={"identity_type": "anonymous"})).json()["error"]
    assert missing["param"] == "email"
    issued = await client.post(
        "/agent/auth", json={"identity_type": "anonymous", "email": "agent@example.com"}
    )
    assert issued.status_code == 201 and issued.json()["scopes"] == ["chat", "models"]
    body = {"identity_type": "identity_assertion", "assertion": "eyJhbGciOi.e30.sig"}
    response = await client.post(
        "/agent/auth", json=body
    )  # live: tests/agent_auth/test_identity_assertion.py
    assert response.status_code == 400 and response.json()["error"]["code"] == "assertion_malformed"
