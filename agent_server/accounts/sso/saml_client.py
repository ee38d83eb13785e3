"""The pysaml2 service provider of one tenant (blocking: call from a worker thread).

Built per request from the stored IdP metadata (about 3 ms): no state outlives a request, so every
process and host answers alike; what must outlive one (the AuthnRequest ids we sent) is in the KV.
Signatures are checked in-process (saml_crypto.py, signxml): no program needs to be installed.
"""

from __future__ import annotations

import logging

from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT, SAMLError
from saml2.client import Saml2Client
from saml2.config import SPConfig
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS

from agent_server.accounts.sso.saml_crypto import CONFIG_VALUE, use_signxml
from agent_server.accounts.sso.saml_endpoints import SpEndpoints
from agent_server.foundation.errors import Conflict

CLOCK_SKEW_SECONDS = 60  # NotBefore/NotOnOrAfter tolerance for an IdP whose clock is a little off

# pysaml2 logs whole SAML messages (bearer credentials, e-mail addresses) and tracebacks at ERROR
# when it refuses one; every refusal is logged once by the caller instead, without the message.
logging.getLogger("saml2").setLevel(logging.CRITICAL)


def sp_config(endpoints: SpEndpoints, idp_metadata_xml: str | None = None) -> SPConfig:
    service = {
        "endpoints": {"assertion_consumer_service": [(endpoints.acs_url, BINDING_HTTP_POST)]},
        # The assertion itself must carry the IdP's signature: a signed Response around an unsigned
        # assertion is refused, so no assertion can be moved into another envelope.
        "want_assertions_signed": True,
        "want_response_signed": False,
        "allow_unsolicited": False,
        "authn_requests_signed": False,
        "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
    }
    config = {
        "entityid": endpoints.entity_id,
        "service": {"sp": service},
        "accepted_time_diff": CLOCK_SKEW_SECONDS,
        # Only the certificates of the stored metadata verify signatures, never one the message brings.
        "only_use_keys_in_metadata": True,
        "allow_unknown_attributes": True,  # an IdP may name the address plainly "email"
        "crypto_backend": CONFIG_VALUE,  # replaced by signxml in sp_client (no xmlsec1 program)
        "metadata": {"inline": [idp_metadata_xml]} if idp_metadata_xml else {},
    }
    return SPConfig().load(config)


def sp_client(endpoints: SpEndpoints, idp_metadata_xml: str) -> Saml2Client:
    return use_signxml(Saml2Client(config=sp_config(endpoints, idp_metadata_xml)))


def authn_request(
    endpoints: SpEndpoints, idp_metadata_xml: str, idp_entity_id: str, relay_state: str
) -> tuple[str, str]:
    """(request id, IdP URL carrying the AuthnRequest over HTTP-Redirect)."""
    client = sp_client(endpoints, idp_metadata_xml)
    try:
        request_id, info = client.prepare_for_authenticate(
            entityid=idp_entity_id, relay_state=relay_state, binding=BINDING_HTTP_REDIRECT
        )
    except SAMLError:  # metadata checked at save can expire later (validUntil)
        raise Conflict(
            "The stored IdP metadata no longer describes a usable identity provider (has it expired?); "
            "an administrator must save fresh metadata (PUT /admin/sso/saml).",
            code="saml_metadata_stale",
        ) from None
    return request_id, dict(info["headers"])["Location"]
