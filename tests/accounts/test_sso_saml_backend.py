"""SAML signatures are checked in-process (agent_server/accounts/sso/saml_crypto.py, signxml): sign-in
and our metadata work without the xmlsec1 program, a signature made by xmlsec1 is accepted, and a
signed assertion cannot vouch for a forged copy of itself (signature wrapping)."""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from agent_server.foundation.clock import ManualClock
from agent_server.foundation.settings import Settings
from tests.accounts.saml_idp import Behaviour, SamlIdp, SamlWorld, error_code, saml_world


@pytest.fixture(scope="module")
def idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamlIdp]:
    with SamlIdp(tmp_path_factory.mktemp("idp")).running() as server:
        yield server


@pytest.fixture
async def world(settings: Settings, clock: ManualClock, idp: SamlIdp) -> AsyncIterator[SamlWorld]:
    async with saml_world(settings, clock, idp) as w:
        yield w


async def test_sign_in_and_metadata_need_no_xmlsec1_program(
    world: SamlWorld, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no program at all can be found, xmlsec1 included
    assert shutil.which("xmlsec1") is None
    org = await world.org()
    metadata = await world.client.get(f"/sso/saml/{org.id}/metadata")
    assert metadata.status_code == 200 and "EntityDescriptor" in metadata.text
    await world.connect(org)

    response = await world.sign_in(org)

    assert response.status_code == 200, response.text
    assert (await world.user("alice@acme.example")) is not None


def _wrapped(xml: str) -> str:
    """XSW: a forged copy of the signed assertion (same ID, another address) placed before it."""
    match = re.search(r"<(ns\d+:)?Assertion\b.*?</(ns\d+:)?Assertion>", xml, re.DOTALL)
    assert match is not None
    forged = re.sub(r"<ds:Signature\b.*?</ds:Signature>", "", match.group(0), flags=re.DOTALL)
    forged = forged.replace("alice@acme.example", "mallory@acme.example")
    return xml[: match.start()] + forged + xml[match.start() :]


async def test_a_forged_copy_of_a_signed_assertion_is_refused(world: SamlWorld) -> None:
    org = await world.org()
    await world.connect(org)
    world.idp.behaviour = Behaviour(alter=_wrapped)

    response = await world.sign_in(org)

    assert response.status_code in (400, 401), response.text
    assert error_code(response).lower() in ("saml_signature_invalid", "saml_invalid")
    assert await world.user("mallory@acme.example") is None
    assert await world.user("alice@acme.example") is None


@pytest.fixture(scope="module")
def xmlsec1_idp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SamlIdp]:
    if shutil.which("xmlsec1") is None:
        pytest.skip("the xmlsec1 program is not installed: the signxml-signing IdP covers sign-in")
    with SamlIdp(tmp_path_factory.mktemp("xmlsec1-idp"), signer="xmlsec1").running() as server:
        yield server


async def test_a_signature_made_by_xmlsec1_is_accepted_and_checked(
    settings: Settings, clock: ManualClock, xmlsec1_idp: SamlIdp
) -> None:
    """Another implementation signs (pysaml2's default backend, the xmlsec1 program): interop."""
    async with saml_world(settings, clock, xmlsec1_idp) as world:
        org = await world.org()
        await world.connect(org)
        assert (await world.sign_in(org)).status_code == 200
        world.idp.behaviour = Behaviour(alter=lambda xml: xml.replace("alice@", "mallory@"))
        altered = await world.sign_in(org)
        assert error_code(altered).lower() == "saml_signature_invalid"
