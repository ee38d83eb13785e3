"""A real SAML 2.0 identity provider on loopback, built from pysaml2's own IdP (``saml2.server.Server``).

It serves its metadata at ``/metadata`` and single sign-on at ``/sso``: the AuthnRequest arrives over
HTTP-Redirect, is parsed and checked by pysaml2 against the service providers it trusts (their
metadata, fetched from the app under test), and is answered with the HTTP-POST binding's
auto-submitting form carrying a SAMLResponse signed with a key and self-signed certificate made here
with ``cryptography``. ``Behaviour`` decides what the next response asserts, and how it is wrong when
a test wants it wrong: unsigned, changed after signing, signed with SHA-1, or with an assertion
changed before signing (audience, validity). ``SamlWorld`` runs the app under test beside it, with
the test client as the browser between them.

It signs with the service's own signxml backend by default (nothing to install), or with the
``xmlsec1`` program (``signer="xmlsec1"``, pysaml2's default backend) where that is installed, so a
signature made by another implementation is checked too.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Literal

import httpx
import uvicorn
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from fastapi import FastAPI
from saml2 import BINDING_HTTP_POST, BINDING_HTTP_REDIRECT, saml, xmldsig
from saml2.config import IdPConfig
from saml2.metadata import create_metadata_string
from saml2.samlp import STATUS_AUTHN_FAILED
from saml2.server import Server
from signxml import DigestAlgorithm, SignatureMethod, XMLSigner
from signxml.algorithms import CanonicalizationMethod
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from agent_server.accounts.sso.saml_crypto import CONFIG_VALUE, SignXmlBackend, use_signxml
from agent_server.accounts.tables import TenantDomain
from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import User
from http_facade.app import create_app
from tests.conftest import BASE_URL, free_port, running

PASSWORD_CONTEXT = {"class_ref": "urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport"}


def self_signed(directory: Path, common_name: str) -> tuple[Path, Path]:
    """An RSA key and a self-signed certificate for it, as PEM files."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=365))
        .sign(key, hashes.SHA256())
    )
    key_file, cert_file = directory / f"{common_name}.key", directory / f"{common_name}.crt"
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_file, cert_file


@dataclass
class Behaviour:
    """What the next SAMLResponse says and how it is signed."""

    email: str = "alice@acme.example"
    # name_id: a NameID of format emailAddress; mail/email: an opaque persistent NameID and the address
    # in an attribute of that name.
    email_in: Literal["name_id", "mail", "email"] = "name_id"
    sign_assertion: bool = True
    sign_response: bool = False
    sign_alg: str = xmldsig.SIG_RSA_SHA256
    digest_alg: str = xmldsig.DIGEST_SHA256
    tweak: Callable[[saml.Assertion], None] | None = None  # changes the assertion before it is signed
    alter: Callable[[str], str] | None = None  # changes the response XML after it was signed
    refuse: str | None = None  # answer an error Response (status AuthnFailed) with this message


class LegacySigner(XMLSigner):
    def check_deprecated_methods(self) -> None:
        """An IdP that still signs with SHA-1, which signxml refuses by default (the test wants it)."""


class LegacyBackend(SignXmlBackend):
    def signer(self, *, method: str, digest: str, c14n: str) -> XMLSigner:
        return LegacySigner(
            signature_algorithm=SignatureMethod(method),
            digest_algorithm=DigestAlgorithm(digest),
            c14n_algorithm=CanonicalizationMethod(c14n),
        )


class HookedServer(Server):
    """pysaml2's IdP, with one hook: a test may change the assertion before it is signed."""

    behaviour: Behaviour

    def setup_assertion(self, *args: Any, **kwargs: Any) -> Any:
        assertion = super().setup_assertion(*args, **kwargs)
        if self.behaviour.tweak is not None:
            self.behaviour.tweak(assertion)
        return assertion


@dataclass
class SamlIdp:
    directory: Path
    signer: Literal["signxml", "xmlsec1"] = "signxml"
    port: int = field(default_factory=free_port)
    behaviour: Behaviour = field(default_factory=Behaviour)
    trusted: list[str] = field(default_factory=list)  # metadata XML of the service providers it serves
    _server: HookedServer | None = None
    _server_trusts: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.url = f"http://127.0.0.1:{self.port}"
        self.entity_id = f"{self.url}/metadata"
        self.key_file, self.cert_file = self_signed(self.directory, "idp")
        self.metadata_xml = self._metadata()

    def config(self) -> IdPConfig:
        idp = {
            "endpoints": {"single_sign_on_service": [(f"{self.url}/sso", BINDING_HTTP_REDIRECT)]},
            "name_id_format": [saml.NAMEID_FORMAT_EMAILADDRESS, saml.NAMEID_FORMAT_PERSISTENT],
            "want_authn_requests_signed": False,
        }
        return IdPConfig().load(
            {
                "entityid": self.entity_id,
                "service": {"idp": idp},
                "key_file": str(self.key_file),
                "cert_file": str(self.cert_file),
                # xmlsec1: pysaml2's default backend and the program; else the service's own.
                **({} if self.signer == "xmlsec1" else {"crypto_backend": CONFIG_VALUE}),
                "metadata": {"inline": list(self.trusted)} if self.trusted else {},
            }
        )

    def _metadata(self) -> str:
        xml = create_metadata_string(None, config=self.config())
        return xml.decode() if isinstance(xml, bytes) else xml

    def trust(self, sp_metadata_xml: str) -> None:
        self.trusted.append(sp_metadata_xml)

    def server(self) -> HookedServer:
        """pysaml2's IdP for the service providers trusted now (built once per change: ~130 ms)."""
        if self._server is None or self._server_trusts != self.trusted:
            server = HookedServer(config=self.config())
            if self.signer == "signxml":
                use_signxml(server, LegacyBackend())
            self._server, self._server_trusts = server, list(self.trusted)
        self._server.behaviour = self.behaviour
        return self._server

    def response_xml(self, in_response_to: str | None, acs_url: str, sp_entity_id: str) -> str:
        """A SAMLResponse (XML) as ``behaviour`` says; ``in_response_to`` None is IdP-initiated."""
        b = self.behaviour
        if b.refuse is not None:
            return str(
                self.server().create_error_response(in_response_to, acs_url, (STATUS_AUTHN_FAILED, b.refuse))
            )
        if b.email_in == "name_id":
            name_id = saml.NameID(format=saml.NAMEID_FORMAT_EMAILADDRESS, text=b.email)
            identity: dict[str, list[str]] = {"givenName": ["Alice"]}
        else:
            name_id = saml.NameID(format=saml.NAMEID_FORMAT_PERSISTENT, text="u-7f3a9c")
            identity = {b.email_in: [b.email]}
        response = self.server().create_authn_response(
            identity,
            in_response_to,
            acs_url,
            sp_entity_id,
            name_id=name_id,
            authn=PASSWORD_CONTEXT,
            sign_assertion=b.sign_assertion,
            sign_response=b.sign_response,
            sign_alg=b.sign_alg,
            digest_alg=b.digest_alg,
        )
        xml = str(response)
        return b.alter(xml) if b.alter is not None else xml

    def post_form(self, xml: str, acs_url: str, relay_state: str = "") -> str:
        """The HTTP-POST binding's auto-submitting page for ``xml``."""
        http = self.server().apply_binding(
            BINDING_HTTP_POST, xml, acs_url, relay_state, response=True, sign=False
        )
        return str(http["data"])

    def sso(self, request: Request) -> Response:
        server = self.server()
        query = request.query_params
        parsed = server.parse_authn_request(query["SAMLRequest"], BINDING_HTTP_REDIRECT)
        args = server.response_args(parsed.message)
        xml = self.response_xml(args["in_response_to"], args["destination"], args["sp_entity_id"])
        return HTMLResponse(self.post_form(xml, args["destination"], query.get("RelayState", "")))

    def metadata(self, request: Request) -> Response:
        return Response(self.metadata_xml, media_type="application/samlmetadata+xml")

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/metadata", self.metadata), Route("/sso", self.sso)])

    @contextmanager
    def running(self) -> Iterator[SamlIdp]:
        config = uvicorn.Config(self.app(), host="127.0.0.1", port=self.port, log_level="warning")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the SAML IdP did not start")
            time.sleep(0.02)
        try:
            yield self
        finally:
            server.should_exit = True
            thread.join(timeout=10)


class _FormReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self.action = values.get("action", "")
        elif tag == "input" and values.get("name"):
            self.fields[values["name"]] = values.get("value", "")


def read_form(html: str) -> tuple[str, dict[str, str]]:
    """What a browser would submit from the IdP's page: (action URL, form fields)."""
    reader = _FormReader()
    reader.feed(html)
    return reader.action, reader.fields


# -- the app under test, with this IdP and a browser between them -------------------------------


@dataclass
class Org:
    id: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@dataclass
class SamlWorld:
    app: FastAPI
    client: httpx.AsyncClient
    clock: ManualClock
    idp: SamlIdp

    async def org(self, domain: str | None = "acme.example", *, verified: bool = True) -> Org:
        """A tenant with an admin (JWT issued directly) and, optionally, a claimed e-mail domain."""
        db, now = self.app.state.services.db, self.clock.now()
        tenant = await repo.create_tenant(db, now, f"org-{uuid.uuid4().hex[:8]}", "enterprise")
        admin = repo.new_user(now, tenant.id, f"owner@{tenant.name}.example", None, ["tenant:admin"])
        await repo.add_user(db, admin)
        if domain is not None:
            created = datetime.fromtimestamp(now, UTC)
            verified_at = created if verified else None
            async with db.session() as session:
                session.add(TenantDomain(domain=domain, tenant_id=tenant.id, verification_token="t" * 32,
                                         created_at=created, verified_at=verified_at))  # fmt: skip
        return Org(tenant.id, self.app.state.accounts.sessions.issue(admin).access_token)

    async def connect(self, org: Org) -> None:
        """Give the tenant the IdP's metadata, and the IdP ours (as an admin would, both ways)."""
        saved = await self.client.put(
            "/admin/sso/saml", json={"idp_metadata_xml": self.idp.metadata_xml}, headers=org.headers
        )
        assert saved.status_code == 200, saved.text
        self.idp.trust((await self.client.get(f"/sso/saml/{org.id}/metadata")).text)

    async def through_idp(self, org: Org, relay_state: str = "") -> tuple[str, dict[str, str]]:
        """Start at the app, follow the redirect to the IdP: the form its page would submit."""
        start = await self.client.get(f"/sso/saml/{org.id}/start", params={"relay_state": relay_state})
        assert start.status_code == 302, start.text
        assert start.headers["location"].startswith(f"{self.idp.url}/sso?SAMLRequest=")
        async with httpx.AsyncClient() as browser:
            page = await browser.get(start.headers["location"])
        assert page.status_code == 200, page.text
        return read_form(page.text)

    async def post(self, action: str, fields: dict[str, str]) -> httpx.Response:
        return await self.client.post(action, data=fields)

    async def sign_in(self, org: Org, relay_state: str = "") -> httpx.Response:
        return await self.post(*await self.through_idp(org, relay_state))

    async def user(self, email: str) -> User | None:
        return await repo.find_user(self.app.state.services.db, email)


@asynccontextmanager
async def saml_world(settings: Settings, clock: ManualClock, idp: SamlIdp) -> AsyncIterator[SamlWorld]:
    """The app (ManualClock, over ASGI) and ``idp``, reset to its default behaviour."""
    idp.behaviour, idp.trusted[:] = Behaviour(), []
    async with (
        running(create_app(settings, clock=clock)) as app,
        httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url=BASE_URL) as client,
    ):
        yield SamlWorld(app, client, clock, idp)


def error_code(response: httpx.Response) -> str:
    return response.json()["error"]["code"]
