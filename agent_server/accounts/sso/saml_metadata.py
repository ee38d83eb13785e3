"""SAML metadata (pysaml2, blocking: call from a worker thread).

The identity provider's metadata is read and checked when a tenant admin saves it, so a sign-in never
fails on something the admin could have been told at once: one IdP, an SSO endpoint with the
HTTP-Redirect binding, a usable signing certificate, and no demand for signed requests (this service
provider sends unsigned AuthnRequests). Ours is what the IdP needs to trust us.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from cryptography import x509
from saml2 import BINDING_HTTP_REDIRECT, SAMLError
from saml2.mdstore import InMemoryMetaData
from saml2.metadata import create_metadata_string

from agent_server.accounts.sso.saml_client import sp_config
from agent_server.accounts.sso.saml_endpoints import SpEndpoints
from agent_server.foundation.errors import ValidationFailed
from agent_server.foundation.timeutil import iso
from agent_server.foundation.urls import split_url

PARAM = "idp_metadata_xml"


@dataclass(frozen=True, slots=True)
class IdpCertificate:
    subject: str
    not_after: str


@dataclass(frozen=True, slots=True)
class IdpMetadata:
    entity_id: str
    sso_url: str
    certificates: tuple[IdpCertificate, ...]

    def view(self) -> dict[str, Any]:
        return {
            "entity_id": self.entity_id,
            "sso_url": self.sso_url,
            "signing_certificates": [
                {"subject": c.subject, "not_after": c.not_after} for c in self.certificates
            ],
        }


def _invalid(message: str, code: str = "saml_metadata_invalid") -> ValidationFailed:
    return ValidationFailed(message, code=code, param=PARAM)


def _single_idp(store: InMemoryMetaData) -> tuple[str, dict[str, Any]]:
    idps = [(entity_id, entity) for entity_id, entity in store.items() if entity.get("idpsso_descriptor")]
    if len(idps) == 1:
        return idps[0]
    if idps:
        raise _invalid(f"The metadata describes {len(idps)} identity providers; paste the metadata of one.")
    if store.to_old:
        raise _invalid("The metadata has expired (its validUntil is in the past); download it again.")
    raise _invalid("The metadata describes no SAML 2.0 identity provider (IDPSSODescriptor).")


def _redirect_sso_url(descriptor: dict[str, Any]) -> str:
    for service in descriptor.get("single_sign_on_service", []):
        if service.get("binding") == BINDING_HTTP_REDIRECT:
            location = str(service.get("location", ""))
            parts = split_url(location)
            if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
                raise _invalid(f"The HTTP-Redirect SSO location {location!r} is not an http(s) URL.")
            return location
    raise _invalid(
        "The identity provider offers no SingleSignOnService with the HTTP-Redirect binding.",
        "saml_metadata_no_redirect_sso",
    )


def _certificate(text: str) -> IdpCertificate:
    try:
        cert = x509.load_der_x509_certificate(base64.b64decode("".join(text.split()), validate=True))
    except (binascii.Error, ValueError):
        raise _invalid("A signing certificate in the metadata is not a valid X.509 certificate.") from None
    return IdpCertificate(cert.subject.rfc4514_string(), iso(cert.not_valid_after_utc))


def read_idp_metadata(xml: str) -> IdpMetadata:
    """The checked facts of an IdP's metadata; a 400 naming what is missing otherwise."""
    store = InMemoryMetaData([], xml)
    try:
        store.load()
    except (SAMLError, ValueError, SyntaxError) as exc:  # defusedxml's refusals are ValueErrors
        raise _invalid(f"The metadata is not SAML 2.0 metadata XML ({type(exc).__name__}).") from None
    entity_id, entity = _single_idp(store)
    descriptor = entity["idpsso_descriptor"][0]
    if str(descriptor.get("want_authn_requests_signed", "")).lower() in ("true", "1"):
        raise _invalid(
            "The identity provider wants signed AuthnRequests (WantAuthnRequestsSigned); this service "
            "provider sends unsigned requests: turn that off for this application at the IdP.",
            "saml_signed_requests_unsupported",
        )
    sso_url = _redirect_sso_url(descriptor)
    try:
        certificates = tuple(_certificate(cert) for _, cert in store.certs(entity_id, "idpsso", "signing"))
    except KeyError:  # a KeyDescriptor without X509Data (a bare key): nothing to check a signature
        certificates = ()
    if not certificates:
        raise _invalid(
            "The metadata has no signing certificate (KeyDescriptor use='signing' with an X509Certificate).",
            "saml_metadata_no_certificate",
        )
    return IdpMetadata(entity_id, sso_url, certificates)


def sp_metadata_xml(endpoints: SpEndpoints) -> str:
    """Our SPSSODescriptor: entity id, the HTTP-POST ACS, signed assertions wanted, e-mail NameIDs."""
    xml = create_metadata_string(None, config=sp_config(endpoints))
    return xml.decode() if isinstance(xml, bytes) else xml
