"""pysaml2's XML signatures done in-process with signxml (lxml and cryptography, both installed by
pip as wheels), instead of the ``xmlsec1`` program pysaml2 runs by default.

pysaml2 asks its "crypto backend" two things we use: check the signature of the element
``node_name`` with ``ID=node_id`` against a certificate of the stored IdP metadata, and, for the
test identity provider, sign such an element whose template ``ds:Signature`` it has inserted.
Its other pip-only backend (``XMLSecurity``, pyXMLSecurity) checks *a* signature of the document
whatever the node asked, which lets a signed element vouch for a forged one beside it; this one
verifies exactly the asked node: the one element of the document with that ID, of that name, with
its enveloped signature as a direct child, whose one reference is that element (signxml returns
what was signed, and it must be that element).

The metadata's certificate carries the key; its validity period is not checked (the SAML metadata
interoperability profile says so, and xmlsec1 with ``--pubkey-cert-pem`` did not either): trust
comes from the metadata the tenant's administrator saved. SHA-1 signatures verify here and are
refused afterwards with their own reason (``saml_response.WEAK_ALGORITHMS``).

Entities are built with ``crypto_backend: XMLSecurity`` (the setting of pysaml2 that needs no
program at start) and ``use_signxml`` puts this backend in place before the entity is used.
"""

from __future__ import annotations

import base64
from dataclasses import replace
from pathlib import Path
from typing import Any

from cryptography import x509
from lxml import etree
from saml2.sigver import CryptoBackend, SignatureError, Unsupported
from signxml import DigestAlgorithm, SignatureConfiguration, SignatureMethod, XMLSigner, XMLVerifier
from signxml.algorithms import CanonicalizationMethod
from signxml.exceptions import SignXMLException

DS = "http://www.w3.org/2000/09/xmldsig#"
NS = {"ds": DS}
CONFIG_VALUE = "XMLSecurity"  # pysaml2's crypto_backend that starts without xmlsec1 (replaced here)
# Hostile input: no entities, no network, no huge trees (the ACS already refused DTDs).
PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, remove_comments=False)
VERIFY = SignatureConfiguration(
    location="./",  # the signature is a direct child of the signed element (enveloped)
    expect_references=1,
    signature_methods=frozenset(SignatureMethod),  # SHA-1 is refused later, with its own reason
    digest_algorithms=frozenset(DigestAlgorithm),
)


def _tag(node_name: str) -> str:
    """pysaml2 names an element ``namespace:Local``; lxml ``{namespace}Local``."""
    namespace, _, local = node_name.rpartition(":")
    return f"{{{namespace}}}{local}"


def _node(xml: str | bytes, node_name: str, node_id: str | None) -> tuple[etree._Element, etree._Element]:
    """(document root, the one element of that name with ``ID=node_id``)."""
    data = xml.encode() if isinstance(xml, str) else xml
    root = etree.fromstring(data, PARSER)
    if not node_id:
        raise SignatureError("no node id to sign or verify")
    found = [element for element in root.iter() if element.get("ID") == node_id]
    if len(found) != 1 or found[0].tag != _tag(node_name):  # a second element with the ID: wrapping
        raise SignatureError(f"expected exactly one {node_name} with ID {node_id!r}")
    return root, found[0]


def _pem(cert_file: str) -> bytes:
    """pysaml2 passes a file name (or, in a few paths, the PEM itself)."""
    if cert_file.lstrip().startswith("-----BEGIN"):
        return cert_file.encode()
    return Path(cert_file).read_bytes()


class SignXmlBackend(CryptoBackend):
    @property
    def version(self) -> str:
        from importlib.metadata import version

        return version("signxml")

    def validate_signature(
        self, signedtext: str | bytes, cert_file: str, cert_type: str, node_name: str, node_id: str
    ) -> bool:
        if cert_type != "pem":
            raise Unsupported("only PEM certificates are supported")
        try:
            _, node = _node(signedtext, node_name, node_id)
            cert = x509.load_pem_x509_certificate(_pem(cert_file))
            config = replace(VERIFY, verification_time=cert.not_valid_before_utc)  # key carrier only
            result = XMLVerifier().verify(node, x509_cert=cert, id_attribute="ID", expect_config=config)
        except (SignXMLException, SignatureError, etree.XMLSyntaxError, ValueError):
            return False
        signed = result.signed_xml  # what the signature covers: it must be the node itself
        return signed is not None and signed.tag == node.tag and signed.get("ID") == node_id

    def sign_statement(self, statement: str | bytes, node_name: str, key_file: str, node_id: str) -> str:
        """Sign the element as its template ``ds:Signature`` (inserted by pysaml2) says."""
        root, node = _node(statement, node_name, node_id)
        template = node.find("ds:Signature", NS)
        if template is None:
            raise SignatureError(f"{node_name} {node_id!r} has no signature template")
        signer = self.signer(
            method=_algorithm(template, "ds:SignedInfo/ds:SignatureMethod"),
            digest=_algorithm(template, "ds:SignedInfo/ds:Reference/ds:DigestMethod"),
            c14n=_algorithm(template, "ds:SignedInfo/ds:CanonicalizationMethod"),
        )
        certificate = template.find("ds:KeyInfo/ds:X509Data/ds:X509Certificate", NS)
        placeholder = etree.Element(f"{{{DS}}}Signature", Id="placeholder")
        node.replace(template, placeholder)  # where the template was: SAML's schema fixes the place
        cert = _pem_certificate(certificate.text) if certificate is not None and certificate.text else None
        try:
            signed = signer.sign(root, key=Path(key_file).read_bytes(), cert=cert, reference_uri=node_id)
        except (SignXMLException, ValueError) as exc:
            raise SignatureError(f"signing {node_name} failed: {exc}") from exc
        return etree.tostring(signed, encoding="unicode")

    def signer(self, *, method: str, digest: str, c14n: str) -> XMLSigner:
        return XMLSigner(
            signature_algorithm=SignatureMethod(method),
            digest_algorithm=DigestAlgorithm(digest),
            c14n_algorithm=CanonicalizationMethod(c14n),
        )

    def encrypt(self, *args: Any, **kwargs: Any) -> Any:
        raise Unsupported("encrypted assertions are not supported")

    encrypt_assertion = decrypt = encrypt


def _algorithm(template: etree._Element, path: str) -> str:
    element = template.find(path, NS)
    if element is None or not element.get("Algorithm"):
        raise SignatureError(f"the signature template has no {path}")
    return str(element.get("Algorithm"))


def _pem_certificate(base64_der: str) -> str:
    body = "".join(base64_der.split())
    base64.b64decode(body, validate=True)  # a template's certificate is ours: fail loudly if not
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "-----BEGIN CERTIFICATE-----\n" + "\n".join(lines) + "\n-----END CERTIFICATE-----\n"


def use_signxml(entity: Any, backend: CryptoBackend | None = None) -> Any:
    """Give a pysaml2 entity (client, IdP server) this backend; returns the entity."""
    entity.sec.crypto = backend or SignXmlBackend()
    return entity
