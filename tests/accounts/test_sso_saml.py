"""SAML 2.0 sign-in against a real pysaml2 identity provider on loopback (tests/accounts/saml_idp.py).

The test client plays the browser: GET /sso/saml/{tenant}/start on the app, follow the 302 to the
IdP, read the IdP's auto-submitting form and POST it to our ACS. Signatures are made and checked
in-process (signxml): no program needs to be installed.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator

import pytest
from saml2 import saml, xmldsig
from saml2.time_util import a_while_ago
from sqlalchemy import update

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from agent_server.gateway import repository as repo
from agent_server.gateway.tables import Tenant
from tests.accounts.saml_idp import Behaviour, SamlIdp, SamlWorld, error_code, read_form, saml_world
from tests.conftest import BASE_URL


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamlIdp]:
    with SamlIdp(tmp_path_factory.mktemp("idp")).running() as server:
        yield server


@pytest.fixture
async def world(settings: Settings, clock: ManualClock, idp: SamlIdp) -> AsyncIterator[SamlWorld]:
    async with saml_world(settings, clock, idp) as w:
        yield w


# -- sign-in --------------------------------------------------------------------------------------


async def test_sign_in_creates_the_user_in_the_tenant_and_the_jwt_works(world: SamlWorld) -> None:
    org = await world.org()
    await world.connect(org)

    response = await world.sign_in(org, relay_state="dashboard/keys")

    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    body = response.json()
    assert body["tenant_id"] == org.id and body["token_type"] == "bearer"
    assert body["relay_state"] == "dashboard/keys"
    user = await world.user("alice@acme.example")
    assert user is not None and user.id == body["user_id"] and user.tenant_id == org.id
    assert user.permissions == ["tenant:admin"] and user.email_verified_at is not None
    keys = await world.client.get(
        "/admin/api-keys", headers={"Authorization": f"Bearer {body['access_token']}"}
    )
    assert keys.status_code == 200 and keys.json()["object"] == "list"

    again = await world.sign_in(org)  # the second sign-in finds the same user
    assert again.status_code == 200 and again.json()["user_id"] == user.id
    assert again.json()["relay_state"] is None


@pytest.mark.parametrize("attribute", ["mail", "email"])
async def test_the_address_may_come_from_an_attribute(world: SamlWorld, attribute: str) -> None:
    org = await world.org()
    await world.connect(org)
    world.idp.behaviour = Behaviour(email="Bob@ACME.example", email_in=attribute)  # type: ignore[arg-type]

    response = await world.sign_in(org)

    assert response.status_code == 200, response.text
    user = await world.user("bob@acme.example")
    assert user is not None and user.tenant_id == org.id


def _audience(assertion: saml.Assertion) -> None:
    assertion.conditions.audience_restriction[0].audience[0].text = "https://another-sp.example/metadata"


def _expired(assertion: saml.Assertion) -> None:
    assertion.conditions.not_before = a_while_ago(minutes=20)
    assertion.conditions.not_on_or_after = a_while_ago(minutes=10)
    for confirmation in assertion.subject.subject_confirmation:
        confirmation.subject_confirmation_data.not_on_or_after = a_while_ago(minutes=10)


def _destination(xml: str) -> str:  # the Response is not signed: only the assertion is
    return xml.replace('Destination="http://127.0.0.1:8000/', 'Destination="https://another-sp.example/', 1)


def _response_issuer(xml: str) -> str:
    return re.sub(r"(<ns\d:Issuer[^>]*>)[^<]+", r"\1https://impostor.example/idp", xml, count=1)


def _recipient(assertion: saml.Assertion) -> None:
    for confirmation in assertion.subject.subject_confirmation:
        confirmation.subject_confirmation_data.recipient = "https://another-sp.example/acs"


@pytest.mark.parametrize(
    ("behaviour", "code"),
    [
        # A signed Response around an unsigned assertion is not enough.
        (Behaviour(sign_assertion=False, sign_response=True), "saml_signature_invalid"),
        (Behaviour(sign_assertion=False), "saml_signature_invalid"),
        # Signed, then the address changed in the XML.
        (
            Behaviour(alter=lambda xml: xml.replace("alice@acme.example", "mallory@acme.example")),
            "saml_signature_invalid",
        ),
        (Behaviour(tweak=_audience), "saml_audience"),
        (Behaviour(tweak=_expired), "saml_expired"),
        (Behaviour(tweak=_recipient), "saml_recipient"),
        (Behaviour(alter=_destination), "saml_destination"),
        (Behaviour(alter=_response_issuer), "saml_issuer"),
        (Behaviour(sign_alg=xmldsig.SIG_RSA_SHA1, digest_alg=xmldsig.DIGEST_SHA1), "saml_weak_signature"),
        (Behaviour(refuse="wrong password"), "saml_idp_error"),
    ],
    ids=[
        "unsigned-in-signed-response",
        "unsigned",
        "altered",
        "audience",
        "expired",
        "recipient",
        "destination",
        "issuer",
        "sha1",
        "idp-refused",
    ],
)
async def test_a_bad_assertion_is_refused(world: SamlWorld, behaviour: Behaviour, code: str) -> None:
    org = await world.org()
    await world.connect(org)
    world.idp.behaviour = behaviour

    response = await world.sign_in(org)

    assert response.status_code == 401, response.text
    assert error_code(response) == code.upper()  # the public-site envelope upper-cases codes
    assert "Traceback" not in response.text
    assert await world.user("alice@acme.example") is None
    assert await world.user("mallory@acme.example") is None


async def test_a_replayed_response_is_refused(world: SamlWorld) -> None:
    org = await world.org()
    await world.connect(org)
    action, fields = await world.through_idp(org)
    assert (await world.post(action, fields)).status_code == 200

    replay = await world.post(action, fields)

    assert replay.status_code == 401 and error_code(replay) == "SAML_UNSOLICITED"


async def test_unsolicited_responses_are_refused(world: SamlWorld) -> None:
    org = await world.org()
    await world.connect(org)
    acs, sp = f"{BASE_URL}/sso/saml/{org.id}/acs", f"{BASE_URL}/sso/saml/{org.id}/metadata"
    for in_response_to in (None, "id-never-sent-by-us"):  # IdP-initiated, and an id we never sent
        xml = world.idp.response_xml(in_response_to, acs, sp)

        response = await world.post(*read_form(world.idp.post_form(xml, acs)))

        assert response.status_code == 401 and error_code(response) == "SAML_UNSOLICITED"
    assert await world.user("alice@acme.example") is None


async def test_a_request_older_than_the_state_ttl_is_forgotten(world: SamlWorld) -> None:
    org = await world.org()
    await world.connect(org)
    action, fields = await world.through_idp(org)

    world.clock.advance(world.app.state.services.settings.sso_state_ttl_seconds + 1)
    response = await world.post(action, fields)

    assert response.status_code == 401 and error_code(response) == "SAML_UNSOLICITED"


async def test_a_response_for_one_tenant_is_refused_at_another(world: SamlWorld) -> None:
    org, other = await world.org(), await world.org("other.example")
    await world.connect(org)
    await world.connect(other)
    _, fields = await world.through_idp(org)

    response = await world.post(f"/sso/saml/{other.id}/acs", fields)

    assert response.status_code == 401 and error_code(response) == "SAML_UNSOLICITED"


async def test_the_relay_state_must_be_the_one_sent(world: SamlWorld) -> None:
    org = await world.org()
    await world.connect(org)
    action, fields = await world.through_idp(org, relay_state="keys")

    response = await world.post(action, {**fields, "RelayState": "elsewhere"})

    assert response.status_code == 401 and error_code(response) == "SAML_RELAY_STATE"


async def test_an_unverified_domain_is_refused(world: SamlWorld) -> None:
    org = await world.org(verified=False)
    await world.connect(org)

    response = await world.sign_in(org)

    assert response.status_code == 403 and error_code(response) == "SSO_DOMAIN_NOT_VERIFIED"
    assert await world.user("alice@acme.example") is None


async def test_a_user_of_another_tenant_is_refused(world: SamlWorld) -> None:
    org, elsewhere = await world.org(), await world.org(None)
    db, now = world.app.state.services.db, world.clock.now()
    await repo.add_user(db, repo.new_user(now, elsewhere.id, "alice@acme.example", None, ["tenant:admin"]))
    await world.connect(org)

    response = await world.sign_in(org)

    assert response.status_code == 403 and error_code(response) == "SSO_USER_ELSEWHERE"
    user = await world.user("alice@acme.example")
    assert user is not None and user.tenant_id == elsewhere.id  # never moved


async def test_a_platform_admin_is_never_signed_in_by_a_tenants_idp(world: SamlWorld) -> None:
    org = await world.org()
    db, now = world.app.state.services.db, world.clock.now()
    operator = repo.new_user(now, org.id, "alice@acme.example", None, ["platform:admin", "tenant:admin"])
    await repo.add_user(db, operator)
    await world.connect(org)

    response = await world.sign_in(org)

    assert response.status_code == 403 and error_code(response) == "SSO_PLATFORM_ADMIN", response.text
    assert "passkey" in response.json()["error"]["message"] and "access_token" not in response.text


async def test_a_plan_without_sso_refuses_the_start_and_the_acs(world: SamlWorld) -> None:
    org = await world.org()
    await world.connect(org)
    action, fields = await world.through_idp(org)  # started before the downgrade
    async with world.app.state.services.db.session() as session:
        await session.execute(update(Tenant).where(Tenant.id == org.id).values(plan_id="starter"))  # type: ignore[arg-type]

    start = await world.client.get(f"/sso/saml/{org.id}/start")
    late = await world.post(action, fields)

    for refused in (start, late):
        assert refused.status_code == 403, refused.text
        assert error_code(refused) == "PLAN_LIMIT_EXCEEDED" and refused.json()["error"]["param"] == "sso"
    assert await world.user("alice@acme.example") is None


@pytest.mark.parametrize(
    ("saml_response", "code"),
    [
        ("not base64 at all!", "SAML_MALFORMED"),
        ("PG5vdCB4bWw=", "SAML_MALFORMED"),  # base64 of "<not xml"
        (
            # A document type (the door to entity expansion) is refused before any parsing.
            "PD94bWwgdmVyc2lvbj0iMS4wIj8+PCFET0NUWVBFIHggWzwhRU5USVRZIGEgImIiPl0+PHg+JmE7PC94Pg==",
            "SAML_MALFORMED",
        ),
    ],
)
async def test_malformed_posts_are_400(world: SamlWorld, saml_response: str, code: str) -> None:
    org = await world.org()
    await world.connect(org)

    response = await world.post(f"/sso/saml/{org.id}/acs", {"SAMLResponse": saml_response})

    assert response.status_code == 400 and error_code(response) == code
    missing = await world.post(f"/sso/saml/{org.id}/acs", {"RelayState": "x"})
    assert missing.status_code == 400


@pytest.mark.redis
async def test_processes_sharing_redis_take_a_request_once(
    settings: Settings, clock: ManualClock, idp: SamlIdp, redis_url: str
) -> None:
    """Two apps on one database and one Redis: the response may arrive at either, and only once."""
    shared = settings.model_copy(update={"redis_url": redis_url})
    async with saml_world(shared, clock, idp) as one, saml_world(shared, clock, idp) as two:
        org = await one.org()
        await one.connect(org)
        action, fields = await one.through_idp(org)

        first = await two.post(action, fields)
        replay = await one.post(action, fields)

    assert first.status_code == 200, first.text
    assert replay.status_code == 401 and error_code(replay) == "SAML_UNSOLICITED"
