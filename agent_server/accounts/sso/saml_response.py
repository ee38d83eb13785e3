"""Checking a SAMLResponse at our ACS (pysaml2 and signxml, blocking: call from a worker thread).

pysaml2 checks the assertion's signature against the stored metadata's certificates, the audience,
NotBefore/NotOnOrAfter and the bearer SubjectConfirmation (with ``CLOCK_SKEW_SECONDS``), and
InResponseTo against the one request id the caller took from the KV. Checked here as well, since
pysaml2 skips or only half-reports them: Destination and Recipient are our ACS URL, the issuer is the
configured IdP, no SHA-1 in the signature, and an e-mail from an emailAddress NameID or an email/mail
attribute. pysaml2 refuses with many exception types (some bare ``Exception``); each becomes one 4xx
with a code naming the reason.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import traceback
from pathlib import Path
from xml.etree.ElementTree import ParseError

import defusedxml.ElementTree as safe_xml
from defusedxml import DefusedXmlException
from saml2 import BINDING_HTTP_POST, xmldsig
from saml2.response import AuthnResponse, IncorrectlySigned, StatusError, UnsolicitedResponse
from saml2.saml import NAMEID_FORMAT_EMAILADDRESS
from saml2.sigver import SigverError
from saml2.validate import ResponseLifetimeExceed, ToEarly

from agent_server.accounts.sso.saml_client import sp_client
from agent_server.accounts.sso.saml_endpoints import SpEndpoints
from agent_server.foundation.errors import AgentError, AuthFailed, ValidationFailed

log = logging.getLogger("agentgate.sso.saml")
RESPONSE_TAG = "{urn:oasis:names:tc:SAML:2.0:protocol}Response"
WEAK_ALGORITHMS = {xmldsig.SIG_RSA_SHA1, xmldsig.SIG_DSA_SHA1, xmldsig.SIG_ECDSA_SHA1, xmldsig.DIGEST_SHA1}
EMAIL_ATTRIBUTES = {"email", "mail", "emailaddress"}  # compared with a name's last segment, lower-cased
MAX_ID_LENGTH = 256  # ours are about 20 characters; a longer one is not ours (and not a KV key)
EMAIL = re.compile(r"^[^@\s]{1,64}@[^@\s]+\.[^@\s]+$")


def refused(message: str, code: str, cause: str = "") -> AuthFailed:
    """The 401 of a refused sign-in, logged once by its code (never the message or the XML)."""
    log.info("SAML sign-in refused (%s)%s", code, f": {cause}" if cause else "")
    return AuthFailed(f"SAML sign-in refused: {message}", code=code)


def request_id_of(saml_response: str) -> str:
    """The InResponseTo of a posted SAMLResponse, read before anything is trusted (to find our request)."""
    try:
        xml = base64.b64decode("".join(saml_response.split()), validate=True)
        root = safe_xml.fromstring(xml, forbid_dtd=True)
    except (binascii.Error, ValueError, ParseError, DefusedXmlException):
        raise ValidationFailed(
            "SAMLResponse is not a base64-encoded XML document.", code="saml_malformed", param="SAMLResponse"
        ) from None
    if root.tag != RESPONSE_TAG:
        raise ValidationFailed(
            "SAMLResponse is not a SAML 2.0 protocol Response.", code="saml_malformed", param="SAMLResponse"
        )
    request_id = root.get("InResponseTo")
    if not request_id or len(request_id) > MAX_ID_LENGTH:
        raise refused(
            "the response answers no request of ours (IdP-initiated sign-in is not accepted); "
            "start at /sso/saml/{tenant_id}/start.",
            "saml_unsolicited",
        )
    return request_id


def _classify(exc: Exception) -> AuthFailed:
    """One 4xx per pysaml2 refusal; the message says what to fix, never echoes the XML."""
    cause = type(exc).__name__
    if isinstance(exc, UnsolicitedResponse):
        return refused("the response does not answer the request it names.", "saml_unsolicited", cause)
    if isinstance(exc, StatusError):
        return refused(
            "the identity provider reported a failure instead of a sign-in.", "saml_idp_error", cause
        )
    if isinstance(exc, SigverError | IncorrectlySigned):
        return refused(
            "the assertion is not signed by the configured identity provider, or was altered.",
            "saml_signature_invalid",
            cause,
        )
    if isinstance(exc, ResponseLifetimeExceed):
        return refused("the assertion has expired (NotOnOrAfter).", "saml_expired", cause)
    if isinstance(exc, ToEarly):
        return refused("the assertion is not valid yet (NotBefore).", "saml_not_yet_valid", cause)
    if "AudienceRestriction" in str(exc):
        return refused(
            "the assertion is meant for another service provider (Audience).", "saml_audience", cause
        )
    frame = traceback.extract_tb(exc.__traceback__)[-1]  # where, for a maintainer; never the message
    return refused(
        "the assertion's conditions or subject confirmation do not hold for this service provider.",
        "saml_invalid",
        f"{cause} at {Path(frame.filename).name}:{frame.lineno}",
    )


def _parse(
    endpoints: SpEndpoints, idp_metadata_xml: str, saml_response: str, request_id: str
) -> AuthnResponse:
    client = sp_client(endpoints, idp_metadata_xml)
    try:
        response = client.parse_authn_request_response(
            saml_response, BINDING_HTTP_POST, outstanding={request_id: endpoints.acs_url}
        )
    except AgentError:
        raise
    except Exception as exc:  # pysaml2 raises bare Exception for some refusals: classify, never a 500
        raise _classify(exc) from None
    # pysaml2 refuses some responses silently: it answers None, or a response whose assertion it never
    # read (a Destination that is not our ACS, an IssueInstant a day off). Nothing of those is used.
    message = response.response if response is not None else None
    if message is not None and message.destination and message.destination != endpoints.acs_url:
        raise refused("the response was sent to another destination (Destination).", "saml_destination")
    if response is None or response.assertion is None:
        raise refused("the response was not accepted (its IssueInstant, version or form).", "saml_invalid")
    return response


def _check_assertion(response: AuthnResponse, endpoints: SpEndpoints, idp_entity_id: str) -> None:
    """What pysaml2 leaves to its caller: the issuer, the Recipient, the signature's algorithms."""
    assertion = response.assertion
    issuers = {assertion.issuer.text.strip() if assertion.issuer is not None else ""}
    if response.response.issuer is not None:
        issuers.add(response.response.issuer.text.strip())
    if issuers != {idp_entity_id}:
        raise refused("the issuer is not the configured identity provider.", "saml_issuer")
    # pysaml2 compares Recipient only when given conversation info; checked here for every confirmation.
    recipients = {c.subject_confirmation_data.recipient for c in assertion.subject.subject_confirmation}
    if recipients != {endpoints.acs_url}:
        raise refused("the assertion is meant for another ACS URL (Recipient).", "saml_recipient")
    signed_info = assertion.signature.signed_info
    used = {
        signed_info.signature_method.algorithm,
        *(r.digest_method.algorithm for r in signed_info.reference),
    }
    if used & WEAK_ALGORITHMS:
        raise refused(
            "the assertion is signed with SHA-1; configure SHA-256 at the IdP.", "saml_weak_signature"
        )


def _email(response: AuthnResponse) -> str:
    name_id = response.name_id
    candidates = []
    if name_id is not None and name_id.format == NAMEID_FORMAT_EMAILADDRESS and name_id.text:
        candidates.append(name_id.text)
    for name, values in (response.ava or {}).items():
        if re.split(r"[/:#]", name)[-1].lower() in EMAIL_ATTRIBUTES:
            candidates.extend(str(value) for value in values)
    for candidate in candidates:
        email = candidate.strip().lower()
        if len(email) <= 320 and EMAIL.match(email):
            return email
    raise refused(
        "the assertion carries no e-mail address (a NameID of format emailAddress or an email/mail attribute).",
        "saml_no_email",
    )


def asserted_email(
    endpoints: SpEndpoints, idp_metadata_xml: str, idp_entity_id: str, saml_response: str, request_id: str
) -> str:
    """The e-mail address the configured IdP asserted in answer to ``request_id``, or a 4xx."""
    response = _parse(endpoints, idp_metadata_xml, saml_response, request_id)
    _check_assertion(response, endpoints, idp_entity_id)
    return _email(response)
