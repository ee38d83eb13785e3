"""The JWT-bearer grant (RFC 7523) with an ID-JAG as its assertion: an agent holding an identity
assertion from an organisation's identity provider gets an access token at the token endpoint, as
``POST /agent/auth`` gets it an API key (docs/oauth.md).

authlib's grant machinery authenticates the client and shapes the answer; the assertion is checked
by the same code as ``/agent/auth`` (agent_server/agent_auth/assertion.py and asserted.py: issuer,
audience, signature, time, ``jti`` once, the person by the single sign-on rules and a role that may
use the gateway). Its ``client_id`` claim must be the authenticated client's. No refresh token: the
agent exchanges a fresh assertion instead.
"""

from __future__ import annotations

from typing import Any

from authlib.oauth2.rfc6749.errors import InvalidGrantError, InvalidRequestError, UnauthorizedClientError
from authlib.oauth2.rfc6749.grants import BaseGrant, TokenEndpointMixin

from agent_server.foundation.errors import AgentError
from agent_server.foundation.ids import new_id
from agent_server.oauth.bridge import run
from agent_server.oauth.store import Issued
from agent_server.oauth.vocabulary import Owner

JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"


class IdJagGrant(BaseGrant, TokenEndpointMixin):
    GRANT_TYPE = JWT_BEARER
    TOKEN_ENDPOINT_AUTH_METHODS = ["none", "client_secret_basic", "client_secret_post"]

    def validate_token_request(self) -> None:
        assertion = self.request.form.get("assertion")
        if not assertion:
            raise InvalidRequestError("Missing 'assertion': send the ID-JAG.")
        client = self.authenticate_token_endpoint_client()
        if not client.check_grant_type(self.GRANT_TYPE):
            raise UnauthorizedClientError(f"The client is not registered for '{self.GRANT_TYPE}'.")
        try:
            verified, user = run(self.server.identify, assertion)
        except AgentError as refused:
            raise InvalidGrantError(f"{refused.code}: {refused.message}") from None
        if verified.client_id != client.get_client_id():
            raise InvalidGrantError("The assertion's client_id is not this client.")
        self.request.client = client
        self.request.user = Owner(user.id, verified.connection.tenant_id)

    def create_token_response(self) -> tuple[int, Any, Any]:
        client, owner = self.request.client, self.request.user
        scope = client.get_allowed_scope(self.request.payload.scope or client.row.scope)
        resource = self.server.resources[0]
        self.request.issued = Issued(new_id("jwt_", 24), client.get_client_id(), owner, scope, resource)
        token = self.generate_token(user=owner, scope=scope, include_refresh_token=False)
        self.save_token(token)
        return 200, token, self.TOKEN_RESPONSE_HEADER
