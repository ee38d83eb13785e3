"""OAuth discovery: RFC 8414 authorization-server metadata, RFC 9728 protected-resource metadata and
the RFC 6750 / RFC 9728 ``WWW-Authenticate`` challenge every 401 carries.

What is live (docs/oauth.md): API keys (bearer or ``X-API-Key``) on ``/v1``, admin JWTs from
``POST /admin/auth/login``, ``POST /agent/auth`` for anonymous agents and identity assertions, and the
OAuth 2.1 authorization server: authorization code with PKCE S256, refresh rotation, dynamic client
registration and revocation, whose access tokens ``/v1`` accepts for the resource named here. The
admin login is *not* passed off as a token endpoint (it is not an RFC 6749 grant).
"""

from __future__ import annotations

from typing import Any

from agent_server.foundation.settings import Settings
from agent_server.oauth.vocabulary import AUTH_METHODS as CLIENT_AUTH_METHODS
from agent_server.oauth.vocabulary import GRANT_TYPES
from agent_server.oauth.vocabulary import SCOPES as OAUTH_SCOPES  # of access tokens: never admin

AUTHORIZATION_SERVER_PATH = "/.well-known/oauth-authorization-server"
PROTECTED_RESOURCE_PATH = "/.well-known/oauth-protected-resource"
AUTHORIZE_PATH = "/oauth/authorize"
TOKEN_PATH = "/oauth/token"
REVOKE_PATH = "/oauth/revoke"
INTROSPECT_PATH = "/oauth/introspect"
CLIENT_REGISTRATION_PATH = "/oauth/register"
AGENT_AUTH_PATH = "/agent/auth"
REGISTER_PATH = "/register"
REALM = "agentgate"
ID_JAG = "urn:ietf:params:oauth:token-type:id-jag"
IDENTITY_TYPES = ("anonymous", "identity_assertion")


def _base(settings: Settings) -> str:
    return settings.public_base_url.rstrip("/")


def issuer(settings: Settings) -> str:
    return _base(settings)


def bearer_challenge(base_url: str) -> str:
    """The ``WWW-Authenticate`` value of every 401 (spec 5.6, RFC 9728 section 5.1)."""
    return (
        f'Bearer realm="{REALM}", error="invalid_token", '
        f'resource_metadata="{base_url.rstrip("/")}{PROTECTED_RESOURCE_PATH}"'
    )


def authorization_server_metadata(settings: Settings) -> dict[str, Any]:
    base = _base(settings)
    return {
        "issuer": issuer(settings),
        "authorization_endpoint": f"{base}{AUTHORIZE_PATH}",
        "token_endpoint": f"{base}{TOKEN_PATH}",
        "registration_endpoint": f"{base}{CLIENT_REGISTRATION_PATH}",
        "revocation_endpoint": f"{base}{REVOKE_PATH}",
        "scopes_supported": list(OAUTH_SCOPES),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": list(GRANT_TYPES),
        "token_endpoint_auth_methods_supported": list(CLIENT_AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(CLIENT_AUTH_METHODS),
        "introspection_endpoint": f"{base}{INTROSPECT_PATH}",
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
        "client_id_metadata_document_supported": True,
        "service_documentation": f"{base}/AGENTS.md",
        "protected_resources": [base],
        "register_uri": f"{base}{REGISTER_PATH}",
        "agent_auth": {
            "status": "live",
            "skill": f"{base}/AGENTS.md",
            "register_uri": f"{base}{AGENT_AUTH_PATH}",
            "identity_types_supported": list(IDENTITY_TYPES),
            "anonymous": {"credential_types_supported": ["api_key"], "requires": ["email"]},
            "identity_assertion": {
                "assertion_types_supported": [ID_JAG],
                "issuers": "the OIDC single sign-on connection of the organisation that verified the e-mail's domain",
                "credential_types_supported": ["api_key"],
            },
        },
    }


def protected_resource_metadata(settings: Settings, resource_name: str) -> dict[str, Any]:
    base = _base(settings)
    return {
        "resource": base,
        "authorization_servers": [issuer(settings)],
        "scopes_supported": list(OAUTH_SCOPES),
        "bearer_methods_supported": ["header"],
        "resource_name": resource_name,
        "resource_documentation": f"{base}/AGENTS.md",
    }


def with_bearer_challenge(headers: dict[str, str], base_url: str) -> dict[str, str]:
    """Headers of a 401: a Bearer challenge that names the resource metadata, kept if one is there."""
    out = dict(headers)
    key = next((k for k in out if k.lower() == "www-authenticate"), "WWW-Authenticate")
    current = out.pop(key, "")
    if not current.lower().startswith("bearer"):
        out["WWW-Authenticate"] = bearer_challenge(base_url)
    elif "resource_metadata=" in current:
        out["WWW-Authenticate"] = current
    else:
        sep = ", " if current.strip().lower() != "bearer" else " "
        url = f"{base_url.rstrip('/')}{PROTECTED_RESOURCE_PATH}"
        out["WWW-Authenticate"] = f'{current.rstrip()}{sep}resource_metadata="{url}"'
    return out
