"""The pinned ACP files are what the server validates against, and they are sound themselves."""

from __future__ import annotations

from pathlib import Path

import yaml
from openapi_spec_validator import validate

import agent_server.commerce
from tests.commerce.conftest import SPEC


def test_the_server_validates_against_the_pinned_schema() -> None:
    served = Path(agent_server.commerce.__file__).parent / "acp_schema" / "schema.agentic_checkout.json"
    assert served.read_bytes() == (SPEC / "json-schema" / "schema.agentic_checkout.json").read_bytes()
    assert "Apache License" in (SPEC / "LICENSE").read_text()


def test_the_pinned_openapi_documents_are_valid() -> None:
    for name in ("openapi.agentic_checkout.yaml", "openapi.agentic_checkout_webhook.yaml"):
        path = SPEC / "openapi" / name
        document = yaml.safe_load(path.read_text())
        assert document["info"]["version"] == "2026-04-17"
        validate(document, base_uri=path.as_uri())  # the webhook document refers to the checkout one
