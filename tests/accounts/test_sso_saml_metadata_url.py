"""A SAML connection from the URL where the identity provider publishes its metadata (the real
pysaml2 IdP of tests/accounts/saml_idp.py serves it over HTTP), fetched through the outbound guard."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from tests.accounts.saml_idp import SamlIdp, SamlWorld, saml_world


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamlIdp]:
    with SamlIdp(tmp_path_factory.mktemp("idp")).running() as server:
        yield server


@pytest.fixture
async def world(settings: Settings, clock: ManualClock, idp: SamlIdp) -> AsyncIterator[SamlWorld]:
    async with saml_world(settings, clock, idp) as w:
        yield w


async def test_the_metadata_is_fetched_from_its_url_and_signs_people_in(world: SamlWorld) -> None:
    org = await world.org()
    body = {"idp_metadata_url": f"{world.idp.url}/metadata"}
    saved = await world.client.put("/admin/sso/saml", json=body, headers=org.headers)
    assert saved.status_code == 200, saved.text
    assert saved.json()["idp"]["entity_id"] == world.idp.entity_id
    assert saved.json()["idp_metadata_xml"] == world.idp.metadata_xml
    world.idp.trust((await world.client.get(f"/sso/saml/{org.id}/metadata")).text)
    signed_in = await world.sign_in(org)
    assert signed_in.status_code == 200 and signed_in.json()["access_token"], signed_in.text


async def test_a_metadata_url_that_does_not_work_is_a_clear_400(world: SamlWorld) -> None:
    org = await world.org()
    cases = [
        ({"idp_metadata_url": "http://10.0.0.7/metadata"}, "sso_url_refused", "idp_metadata_url"),
        (
            {"idp_metadata_url": f"{world.idp.url}/nothing-here"},
            "sso_metadata_unreachable",
            "idp_metadata_url",
        ),
        ({}, "validation_error", None),
        (
            {"idp_metadata_url": f"{world.idp.url}/metadata", "idp_metadata_xml": "<x/>"},
            "validation_error",
            None,
        ),
    ]
    for body, code, param in cases:
        refused = await world.client.put("/admin/sso/saml", json=body, headers=org.headers)
        assert refused.status_code == 400, (body, refused.text)
        assert refused.json()["error"]["code"] == code, (body, refused.text)
        if param:
            assert refused.json()["error"]["param"] == param
    assert (await world.client.get("/admin/sso/saml", headers=org.headers)).json()["configured"] is False
