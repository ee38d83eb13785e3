"""SAML connection settings (/admin/sso/saml) and our service provider metadata.

The IdP is the real pysaml2 one of tests/accounts/saml_idp.py; its metadata is what admins paste,
and the broken variants below are edits of it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator

import defusedxml.ElementTree as safe_xml
import pytest
from sqlalchemy import update

from agent_server.accounts.tables import SsoConnection
from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import Tenant
from tests.accounts.saml_idp import Org, SamlIdp, SamlWorld, error_code, saml_world
from tests.conftest import BASE_URL

MD = "{urn:oasis:names:tc:SAML:2.0:metadata}"
POST_BINDING = "urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST"


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamlIdp]:
    with SamlIdp(tmp_path_factory.mktemp("idp")).running() as server:
        yield server


@pytest.fixture
async def world(settings: Settings, clock: ManualClock, idp: SamlIdp) -> AsyncIterator[SamlWorld]:
    async with saml_world(settings, clock, idp) as w:
        yield w


async def put(world: SamlWorld, org: Org, **body: object) -> dict:
    response = await world.client.put("/admin/sso/saml", json=body, headers=org.headers)
    assert response.status_code == 200, response.text
    return response.json()


async def test_sp_metadata_is_valid_xml_with_our_acs(world: SamlWorld) -> None:
    org = await world.org()

    response = await world.client.get(f"/sso/saml/{org.id}/metadata")  # before any IdP is configured

    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/samlmetadata+xml")
    root = safe_xml.fromstring(response.content, forbid_dtd=True)
    assert root.tag == f"{MD}EntityDescriptor"
    assert root.get("entityID") == f"{BASE_URL}/sso/saml/{org.id}/metadata"
    sp = root.find(f"{MD}SPSSODescriptor")
    assert sp is not None and sp.get("WantAssertionsSigned") == "true"
    acs = sp.find(f"{MD}AssertionConsumerService")
    assert acs is not None and acs.get("Binding") == POST_BINDING
    assert acs.get("Location") == f"{BASE_URL}/sso/saml/{org.id}/acs"
    assert "emailAddress" in (sp.findtext(f"{MD}NameIDFormat") or "")
    missing = await world.client.get("/sso/saml/ten_nobody/metadata")
    assert missing.status_code == 404 and error_code(missing) == "TENANT_NOT_FOUND"


async def test_settings_round_trip(world: SamlWorld) -> None:
    org = await world.org()
    empty = await world.client.get("/admin/sso/saml", headers=org.headers)
    assert empty.status_code == 200 and empty.json()["configured"] is False
    assert empty.json()["service_provider"] == {
        "entity_id": f"{BASE_URL}/sso/saml/{org.id}/metadata",
        "acs_url": f"{BASE_URL}/sso/saml/{org.id}/acs",
        "metadata_url": f"{BASE_URL}/sso/saml/{org.id}/metadata",
    }

    saved = await put(world, org, idp_metadata_xml=world.idp.metadata_xml)

    assert saved["configured"] is True and saved["enabled"] is True
    assert saved["jit_permissions"] == ["tenant:admin"]
    assert saved["idp"]["entity_id"] == world.idp.entity_id
    assert saved["idp"]["sso_url"] == f"{world.idp.url}/sso"
    assert [c["subject"] for c in saved["idp"]["signing_certificates"]] == ["CN=idp"]
    assert (await world.client.get("/admin/sso/saml", headers=org.headers)).json() == saved

    await put(world, org, idp_metadata_xml=world.idp.metadata_xml, enabled=False)
    off = await world.client.get(f"/sso/saml/{org.id}/start")
    assert off.status_code == 403 and error_code(off) == "SSO_DISABLED"

    deleted = await world.client.delete("/admin/sso/saml", headers=org.headers)
    assert deleted.status_code == 204
    assert (await world.client.get("/admin/sso/saml", headers=org.headers)).json()["configured"] is False
    again = await world.client.delete("/admin/sso/saml", headers=org.headers)
    assert again.status_code == 404
    gone = await world.client.get(f"/sso/saml/{org.id}/start")
    assert gone.status_code == 404 and error_code(gone) == "SSO_NOT_CONFIGURED"


async def test_settings_refuse_non_admins(world: SamlWorld) -> None:
    org = await world.org()
    db, now = world.app.state.services.db, world.clock.now()
    member = await repo.add_user(db, repo.new_user(now, org.id, "member@acme.example", None, []))
    member_headers = {
        "Authorization": f"Bearer {world.app.state.accounts.sessions.issue(member).access_token}"
    }
    body = {"idp_metadata_xml": world.idp.metadata_xml}
    for method in ("GET", "PUT", "DELETE"):
        kwargs = {"json": body} if method == "PUT" else {}
        anonymous = await world.client.request(method, "/admin/sso/saml", **kwargs)
        assert anonymous.status_code == 401, (method, anonymous.text)
        refused = await world.client.request(method, "/admin/sso/saml", headers=member_headers, **kwargs)
        assert refused.status_code == 403, (method, refused.text)
    assert (await world.client.get("/admin/sso/saml", headers=org.headers)).json()["configured"] is False


def _two_idps(xml: str) -> str:
    second = xml.replace('entityID="', 'entityID="https://second.example/', 1)
    namespace = 'xmlns:ns0="urn:oasis:names:tc:SAML:2.0:metadata"'
    return f"<ns0:EntitiesDescriptor {namespace}>{xml}{second}</ns0:EntitiesDescriptor>"


BROKEN_METADATA: list[tuple[str, Callable[[str], str], str]] = [
    ("not-xml", lambda xml: "this is not XML", "saml_metadata_invalid"),
    ("entities", lambda xml: '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "b">]><x>&a;</x>', "saml_metadata_invalid"),
    ("no-idp", lambda xml: xml.replace("IDPSSODescriptor", "SPSSODescriptor"), "saml_metadata_invalid"),
    ("two-idps", _two_idps, "saml_metadata_invalid"),
    ("no-redirect", lambda xml: xml.replace("HTTP-Redirect", "HTTP-POST"), "saml_metadata_no_redirect_sso"),
    ("odd-location", lambda xml: re.sub(r'(HTTP-Redirect" Location=")https?://', r"\1https://[", xml), "saml_metadata_invalid"),
    ("no-cert", lambda xml: re.sub(r"<ns0:KeyDescriptor.*?</ns0:KeyDescriptor>", "", xml), "saml_metadata_no_certificate"),
    ("bare-key", lambda xml: re.sub(r"<ns1:X509Data>.*?</ns1:X509Data>", "", xml), "saml_metadata_no_certificate"),
    ("bad-cert", lambda xml: re.sub(r"(<ns1:X509Certificate>)[^<]+", r"\1QUJD", xml), "saml_metadata_invalid"),
    ("signed-requests", lambda xml: xml.replace('WantAuthnRequestsSigned="false"', 'WantAuthnRequestsSigned="true"'), "saml_signed_requests_unsupported"),
    ("expired", lambda xml: xml.replace('entityID="', 'validUntil="2001-01-01T00:00:00Z" entityID="', 1), "saml_metadata_invalid"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("edit", "code"), [(e, c) for _, e, c in BROKEN_METADATA], ids=[n for n, _, _ in BROKEN_METADATA]
)
async def test_bad_metadata_is_a_clear_400(world: SamlWorld, edit: Callable[[str], str], code: str) -> None:
    org = await world.org()

    response = await world.client.put(
        "/admin/sso/saml", json={"idp_metadata_xml": edit(world.idp.metadata_xml)}, headers=org.headers
    )

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["code"] == code and error["param"] == "idp_metadata_xml", error
    assert "Traceback" not in response.text  # /admin answers in the gateway envelope: codes as they are


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"jit_permissions": ["platform:admin"]}, "invalid_permissions"),  # a tenant cannot grant it
        ({"jit_permissions": ["tenant:admin"] * 6}, "validation_error"),
        ({"colour": "blue"}, "validation_error"),
    ],
)
async def test_bad_settings_are_400(world: SamlWorld, body: dict, code: str) -> None:
    org = await world.org()

    response = await world.client.put(
        "/admin/sso/saml", json={"idp_metadata_xml": world.idp.metadata_xml, **body}, headers=org.headers
    )

    assert response.status_code == 400 and error_code(response) == code, response.text


async def test_new_users_get_the_configured_permissions(world: SamlWorld) -> None:
    org = await world.org()
    await world.connect(org)
    await put(world, org, idp_metadata_xml=world.idp.metadata_xml, jit_permissions=[])

    signed_in = await world.sign_in(org)

    assert signed_in.status_code == 200, signed_in.text
    user = await world.user("alice@acme.example")
    assert user is not None and user.permissions == []
    keys = await world.client.get(
        "/admin/api-keys", headers={"Authorization": f"Bearer {signed_in.json()['access_token']}"}
    )
    assert keys.status_code == 403  # signed in, but not an administrator


async def test_an_enforced_tenant_keeps_its_connection(world: SamlWorld) -> None:
    org = await world.org()
    await world.connect(org)
    async with world.app.state.services.db.session() as session:
        await session.execute(update(Tenant).where(Tenant.id == org.id).values(sso_enforced=True))  # type: ignore[arg-type]

    deleted = await world.client.delete("/admin/sso/saml", headers=org.headers)
    disabled = await world.client.put(
        "/admin/sso/saml",
        json={"idp_metadata_xml": world.idp.metadata_xml, "enabled": False},
        headers=org.headers,
    )

    assert deleted.status_code == 409 and error_code(deleted) == "sso_enforced"
    assert disabled.status_code == 409 and error_code(disabled) == "sso_enforced"
    assert (await world.sign_in(org)).status_code == 200  # still connected and enabled


async def test_metadata_that_expired_after_saving_is_reported_not_crashed_on(world: SamlWorld) -> None:
    org = await world.org()
    saved = await put(world, org, idp_metadata_xml=world.idp.metadata_xml)
    expired = world.idp.metadata_xml.replace('entityID="', 'validUntil="2001-01-01T00:00:00Z" entityID="', 1)
    async with world.app.state.services.db.session() as session:
        row = await session.get(SsoConnection, saved["id"])
        assert row is not None
        row.config = {**row.config, "idp_metadata_xml": expired}

    shown = await world.client.get("/admin/sso/saml", headers=org.headers)
    start = await world.client.get(f"/sso/saml/{org.id}/start")

    assert shown.status_code == 200 and "expired" in shown.json()["idp"]["problem"]
    assert start.status_code == 409 and error_code(start) == "SAML_METADATA_STALE"
